"""A run's answer (``output``) and ``GET /v1/runs/{id}?wait=``: the wait ends on the run's end,
seen through its live channel in this process or through Redis, or when it is up."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from runs.api.serializers import RunOutput
from runs.intake import selectors
from runs.live.waiting import MAX_WAIT_SECONDS
from runs.models import Message, Run
from tests.support.broker import broker_url
from tests.support.sse import text_of
from tests.support.streams import execute_in_thread


def post(caller, session_id, content="count these words"):
    response = caller.client.post(f"/v1/sessions/{session_id}/messages", {"content": content},
                                  format="json")
    assert response.status_code == 202, response.content
    return response.json()["run"]


def last_answer(run_id) -> str:
    message = Message.objects.filter(run_id=run_id, role="assistant").order_by("-seq").first()
    assert message is not None
    return text_of(message.content)


def test_a_completed_run_answers_its_last_text_and_why_the_model_stopped(alice, make_session,
                                                                        inline_runs):
    session = make_session(alice)
    run = post(alice, session["id"])
    assert run["status"] == "completed"
    expected = {"text": last_answer(run["id"]), "stop_reason": "end_turn"}
    assert expected["text"]
    assert run["output"] == expected
    assert alice.client.get(f"/v1/runs/{run['id']}").json()["output"] == expected
    listed = alice.client.get(f"/v1/sessions/{session['id']}/runs").json()["results"]
    assert [r["output"] for r in listed] == [expected]


def test_a_page_of_runs_reads_their_answers_in_one_query(alice, make_session, inline_runs):
    session = make_session(alice)
    post(alice, session["id"])
    runs = list(Run.objects.filter(session_id=session["id"]))
    with CaptureQueriesContext(connection) as one:
        selectors.run_answers(runs)
    post(alice, session["id"], "and these")
    post(alice, session["id"], "and those")
    runs = list(Run.objects.filter(session_id=session["id"]))
    with CaptureQueriesContext(connection) as three:
        answers = selectors.run_answers(runs)
    assert len(one) == len(three) == 1
    assert all(a is not None and a["text"] for a in answers.values())


def test_a_queued_run_has_no_output_and_reading_it_costs_no_query(waiting_run):
    with CaptureQueriesContext(connection) as queries:
        assert selectors.run_answers([waiting_run]) == {waiting_run.pk: None}
    assert len(queries) == 0
    assert RunOutput(waiting_run).data["output"] is None


def test_a_failed_run_has_no_output(alice, make_session, make_agent, inline_runs):
    agent = make_agent(alice, model="scripted:nope")
    run = post(alice, make_session(alice, agent_id=agent["id"])["id"], "hi")
    assert run["status"] == "failed" and run["output"] is None
    assert alice.client.get(f"/v1/runs/{run['id']}").json()["output"] is None


@pytest.fixture(params=["in_process", "redis"])
def followed_run(request, waiting_run, hango_settings) -> Run:
    """The waiting run, its channel in this process (markers seen, no broker) or in Redis; a
    lost marker would be read again only after ten minutes, past the tests' guard."""
    if request.param == "in_process":
        hango_settings(broker_url="", event_live_poll_seconds=600)
    else:
        hango_settings(live_redis_url=broker_url(), event_live_poll_seconds=600)
    return waiting_run


def test_a_wait_ends_when_the_run_completes(alice, followed_run):
    answered: dict = {}

    def wait() -> None:
        try:
            answered["run"] = alice.client.get(
                f"/v1/runs/{followed_run.pk}?wait={MAX_WAIT_SECONDS}").json()
        finally:
            connection.close()

    started = time.monotonic()
    waiter = threading.Thread(target=wait)
    waiter.start()
    execute_in_thread(followed_run.pk).join()
    waiter.join()
    # Woken by the run's last commit: the next read is ten minutes away, and a wait that runs
    # to its end answers after MAX_WAIT_SECONDS at the earliest (test_mcp_runs.py does alike).
    assert time.monotonic() - started < MAX_WAIT_SECONDS
    assert answered["run"]["status"] == "completed"
    assert answered["run"]["output"]["text"] == last_answer(followed_run.pk)


def test_a_wait_that_is_up_answers_the_run_as_it_is(alice, waiting_run):
    answered = alice.client.get(f"/v1/runs/{waiting_run.pk}?wait=0.2")
    assert answered.status_code == 200
    assert answered.json()["status"] == "queued" and answered.json()["output"] is None


@pytest.mark.parametrize("wait", ["soon", "-1", "60.5", "nan", "inf"])
def test_a_bad_wait_is_refused_naming_it(alice, waiting_run, wait):
    answered = alice.client.get(f"/v1/runs/{waiting_run.pk}", {"wait": wait})
    assert answered.status_code == 400
    error = answered.json()["error"]
    assert error["code"] == "invalid_query" and error["detail"] == {"wait": wait}
    assert "'wait'" in error["message"]
