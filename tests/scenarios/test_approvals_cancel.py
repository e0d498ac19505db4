"""Human in the loop: cancelling a run paused for approval (or approved, not yet resumed)
leaves no tool call without its result, and the session goes on; a cancel that raced the pause
is honoured."""

from __future__ import annotations

import time

from harness.approvals import CANCELLED_BEFORE_DECISION
from harness.steps import Interrupted
from runs.execution.assembly import build_execution
from runs.execution.checkpointer import DbCheckpointer, DbControl
from runs.execution.endings import finish_run
from runs.execution.fence import Claim
from runs.execution.worker import claim_run
from runs.models import Run, RunStatus
from tests.support.approvals import (
    CALL_ID,
    approve,
    paused_run,
    post,
    tool_result,
)
from tests.support.broker import queued_tasks
from tests.support.history import assert_valid_history
from tests.support.runs import timings


def test_cancelling_a_paused_run_answers_every_call_and_the_session_goes_on(alice, hitl_session,
                                                                            inline_runs):
    run_id = paused_run(alice, hitl_session)["id"]
    response = alice.client.post(f"/v1/runs/{run_id}/cancel")
    assert response.status_code == 202
    run = response.json()
    assert run["status"] == "cancelled" and run["pending_approvals"] == []
    assert run["finished_at"] is not None
    messages = assert_valid_history(hitl_session["id"])
    closing = messages[-1]
    assert closing.role == "user"
    assert closing.content == [{"type": "tool_result", "tool_use_id": CALL_ID,
                                "content": CANCELLED_BEFORE_DECISION, "is_error": True}]
    assert str(closing.run_id) == run_id
    assert "pending_batch" not in Run.objects.get(pk=run_id).state_json
    events = alice.client.get(f"/v1/runs/{run_id}/events").json()["results"]
    assert [e["type"] for e in events[-2:]] == ["message.created", "run.status"]
    assert events[-2]["data"]["seq"] == closing.seq
    # The session's next message starts a run that completes over a valid history.
    nxt = post(alice, hitl_session, "and now this")
    assert nxt.status_code == 202
    assert nxt.json()["run"]["status"] == "awaiting_approval"  # its own word_count call
    nxt_id = nxt.json()["run"]["id"]
    nxt_call = nxt.json()["run"]["pending_approvals"][0]["tool_use_id"]
    done = approve(alice, nxt_id, {"tool_use_id": nxt_call, "type": "approve"})
    assert done.json()["status"] == "completed"
    assert_valid_history(hitl_session["id"])


def test_a_cancelled_paused_run_can_be_resumed(alice, hitl_session, inline_runs):
    run_id = paused_run(alice, hitl_session)["id"]
    alice.client.post(f"/v1/runs/{run_id}/cancel")
    assert tool_result(hitl_session["id"])["content"] == CANCELLED_BEFORE_DECISION
    resumed = alice.client.post(f"/v1/runs/{run_id}/resume")
    assert resumed.status_code == 202
    assert resumed.json()["status"] == "queued"  # as resumed; it ran inline on commit
    # The demo takes again the step the cancel cut short: a new call, asked for again.
    run = alice.client.get(f"/v1/runs/{run_id}").json()
    assert run["status"] == "awaiting_approval", run["error"]
    [again] = run["pending_approvals"]
    assert again["name"] == "word_count" and again["tool_use_id"] != CALL_ID
    approve(alice, run_id, {"tool_use_id": again["tool_use_id"], "type": "approve"})
    run = Run.objects.get(pk=run_id)
    assert run.status == "completed", run.error
    messages = assert_valid_history(hitl_session["id"])
    assert messages[-1].content[0]["text"].endswith("It has 4 words. All planned steps are done.")


def test_cancelling_an_approved_run_before_it_resumes_answers_every_call(
        alice, hitl_session, broker, hango_settings, transactional_db):
    hango_settings(run_inline=True)
    run_id = paused_run(alice, hitl_session)["id"]
    hango_settings(run_inline=False)
    assert approve(alice, run_id, {"tool_use_id": CALL_ID, "type": "approve"}).json()[
        "status"] == "queued"
    assert queued_tasks(broker) == 1  # the resume, waiting for a worker
    assert alice.client.post(f"/v1/runs/{run_id}/cancel").json()["status"] == "cancelled"
    result = tool_result(hitl_session["id"])
    assert result["is_error"] and "cancelled before this tool call ran" in result["content"]
    assert_valid_history(hitl_session["id"])


def test_a_cancel_that_raced_the_pause_is_honoured_when_the_run_is_claimed(alice, hitl_session,
                                                                          inline_runs):
    run_id = paused_run(alice, hitl_session)["id"]
    # The cancel arrived while the worker was committing the pause: the pause keeps the flag.
    run = Run.objects.get(pk=run_id)
    run.status, run.cancel_requested = RunStatus.RUNNING, True
    finish_run(run, RunStatus.AWAITING_APPROVAL)
    assert run.cancel_requested and run.finished_at is None
    run.save()
    assert approve(alice, run_id, {"tool_use_id": CALL_ID, "type": "approve"}).status_code == 202
    run = Run.objects.get(pk=run_id)
    assert run.status == "cancelled" and not run.cancel_requested
    assert tool_result(hitl_session["id"])["is_error"]
    assert_valid_history(hitl_session["id"])


def test_a_cancel_seen_by_the_loop_before_the_batch_finishes_answers_every_call(
        alice, hitl_session, broker, hango_settings, transactional_db):
    hango_settings(run_inline=True)
    run_id = paused_run(alice, hitl_session)["id"]
    hango_settings(run_inline=False)
    approve(alice, run_id, {"tool_use_id": CALL_ID, "type": "approve"})
    run = claim_run(run_id, "test-worker")
    loop, state, next_seq = build_execution(run)

    class Cancelled:
        def cancel_requested(self) -> bool:
            return True

    given = timings()
    checkpointer = DbCheckpointer(run, DbControl(Claim(run.pk, run.epoch),
                                                 cancel_poll=given.cancel_poll),
                                  next_seq, time.monotonic() + 60, lease=given.lease)
    assert loop.run(state, control=Cancelled(), checkpointer=checkpointer) == \
        Interrupted("cancelled")
    run.refresh_from_db()
    assert run.status == "cancelled" and "pending_batch" not in run.state_json
    result = tool_result(hitl_session["id"])
    assert result["is_error"] and "cancelled before this tool call ran" in result["content"]
    assert_valid_history(hitl_session["id"])
