"""An eval run's close when its last cases end at once, each in a transaction of its own on a
worker of its own: neither sees the other's end before it commits, and the eval run must still
complete."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, transaction

from evals import execution, grading
from evals.models import CaseStatus, EvalCaseResult, EvalRun, EvalSuite


@pytest.fixture
def eval_run(alice, make_agent, transactional_db) -> EvalRun:
    agent = make_agent(alice)
    suite = EvalSuite.objects.create(tenant_id=alice.member.tenant_id, owner=alice.member,
                                     name="pair")
    eval_run = EvalRun.objects.create(tenant_id=alice.member.tenant_id, member=alice.member,
                                      suite=suite, agent_id=agent["id"])
    for name in ("a", "b"):
        EvalCaseResult.objects.create(eval_run=eval_run, case_name=name)
    return eval_run


def test_two_cases_ending_at_once_complete_the_eval_run(eval_run):
    both_ended = threading.Barrier(2)
    failures: list[BaseException] = []

    def end(result: EvalCaseResult) -> None:
        try:
            with transaction.atomic():
                locked = EvalCaseResult.objects.select_for_update().get(pk=result.pk)
                grading.finish(locked, CaseStatus.PASSED, [])
                both_ended.wait(timeout=30)  # each has ended its case, neither has committed
                execution._close_if_done(eval_run.pk)
        except BaseException as exc:  # reported by the test's thread
            failures.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=end, args=(r,)) for r in eval_run.results.all()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    eval_run.refresh_from_db()
    assert eval_run.status == "completed" and eval_run.finished_at is not None


def test_a_read_closes_an_eval_run_whose_close_was_lost(eval_run):
    EvalCaseResult.objects.filter(eval_run=eval_run).update(status=CaseStatus.FAILED)
    assert execution.eval_run_refresh(eval_run).status == "completed"
