"""The evals app's receiver of a run's end: a run of a session known not to be an eval's costs
it no query; one of unknown kind, one indexed read."""

from __future__ import annotations

from django.db import connection
from django.test.utils import CaptureQueriesContext

from evals.tasks import on_run_end


def test_a_chat_run_s_end_makes_no_query_and_an_unknown_one_reads_its_case(queued_run):
    with CaptureQueriesContext(connection) as chat:
        on_run_end(None, run_id=str(queued_run.pk), session_kind="chat")
    with CaptureQueriesContext(connection) as unknown:
        on_run_end(None, run_id=str(queued_run.pk), session_kind=None)
    assert len(chat.captured_queries) == 0
    assert len(unknown.captured_queries) == 1
    assert "eval_case_results" in unknown.captured_queries[0]["sql"]
