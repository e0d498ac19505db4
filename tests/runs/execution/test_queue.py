"""runs.execution.queue through ``POST /v1/sessions/{id}/messages``'s ``multitask``: a message
posted while a run is active waits out of the history, then starts when the runs before it end;
interrupt cancels them first. Runs are driven by hand here (nothing executes them on its own)."""

from __future__ import annotations

import json
import time
import uuid

import pytest

from accounts.models import AuditEntry
from hango_project.ids import time_ordered_uuid
from harness.approvals import CANCELLED_BEFORE_DECISION
from harness.steps import Interrupted
from runs.execution import handoff, queue, tasks, worker
from runs.execution.assembly import build_execution
from runs.execution.checkpointer import DbCheckpointer, DbControl
from runs.execution.fence import Claim
from runs.execution.worker import claim_run
from runs.models import Message, PendingMessage, Run, RunStatus
from tests.support.api import HITL, error_of
from tests.support.history import assert_valid_history
from tests.support.multitask import user_texts
from tests.support.openapi import api_schema, resolved
from tests.support.runs import timings


@pytest.fixture
def session(alice, make_session, hango_settings):
    hango_settings(run_inline=False, broker_url="")  # no commit hook fires in these tests
    return make_session(alice)


def post(caller, session, text, multitask=None):
    body = {"content": text} if multitask is None else {"content": text, "multitask": multitask}
    return caller.client.post(f"/v1/sessions/{session['id']}/messages", body, format="json")


def posted(caller, session, text, multitask=None) -> tuple[dict, dict]:
    response = post(caller, session, text, multitask)
    assert response.status_code == 202, response.content
    return response.json()["message"], response.json()["run"]


def finish(run_id) -> None:
    """Run it to its end (or its pause) as a worker would, and start what waits behind it."""
    assert tasks.advance_run(str(run_id)) in {*worker.MAY_HAVE_ENDED, worker.Outcome.PAUSED}


def answered(session_id) -> list[tuple[str, str]]:
    """Each user text with the final answer that follows it (the demo model quotes it)."""
    messages = assert_valid_history(session_id)
    pairs = []
    for i, m in enumerate(messages):
        if m.role == "user" and m.content[0]["type"] == "text":
            after = [n for n in messages[i + 1:] if n.role == "assistant"
                     and n.content[-1]["type"] == "text"][:1]
            pairs.append((m.content[0]["text"], after[0].content[-1]["text"] if after else ""))
    return pairs


# -- reject, and bad input -------------------------------------------------------------------


@pytest.mark.parametrize("multitask", [None, "reject"])
def test_reject_is_the_default_and_answers_409_naming_the_active_run(alice, session, multitask):
    _, first = posted(alice, session, "one")
    error = error_of(post(alice, session, "two", multitask), 409, "conflict")
    assert error["detail"] == {"active_run": first["id"]}
    assert user_texts(session["id"]) == ["one"]


@pytest.mark.parametrize("value", ["later", "", "REJECT", 1, None, ["enqueue"], {"x": 1}])
def test_a_bad_multitask_answers_422_and_stores_nothing(alice, session, value):
    response = alice.client.post(f"/v1/sessions/{session['id']}/messages",
                                 {"content": "hi", "multitask": value}, format="json")
    error = error_of(response, 422, "validation_error")
    assert list(error["detail"]) == ["multitask"]
    assert not Run.objects.filter(session_id=session["id"]).exists()


@pytest.mark.parametrize("multitask", ["enqueue", "interrupt"])
def test_with_nothing_active_every_strategy_starts_at_once(alice, session, multitask):
    message, run = posted(alice, session, "hi", multitask)
    assert run["status"] == "queued" and message["seq"] == 1 and message["run"] == run["id"]


# -- enqueue ---------------------------------------------------------------------------------


def test_an_enqueued_message_waits_out_of_the_history_then_starts_after_the_active_run(
        alice, session):
    _, first = posted(alice, session, "first")
    message, run = posted(alice, session, "second", "enqueue")
    assert run["status"] == "pending" and run["started_at"] is None
    assert message["seq"] is None and message["run"] == run["id"]
    assert message["content"] == [{"type": "text", "text": "second"}]
    _, third = posted(alice, session, "third", "enqueue")
    # Not in the history yet, nor active: the session's active run is still the first.
    listed = alice.client.get(f"/v1/sessions/{session['id']}/messages").json()["results"]
    assert [m["content"][0]["text"] for m in listed] == ["first"]
    assert alice.client.get(f"/v1/sessions/{session['id']}").json()["active_run"] == first["id"]
    events = alice.client.get(f"/v1/runs/{run['id']}/events").json()["results"]
    assert [(e["type"], e["data"]["status"]) for e in events] == [("run.status", "pending")]

    finish(first["id"])  # its end starts the second, and only the second
    assert Run.objects.get(pk=run["id"]).status == RunStatus.QUEUED
    assert Run.objects.get(pk=third["id"]).status == RunStatus.PENDING
    stored = Message.objects.get(pk=message["id"])  # the id it was given when posted
    assert stored.run_id == Run.objects.get(pk=run["id"]).pk and stored.role == "user"
    assert stored.created_at.isoformat().replace("+00:00", "Z") == message["created_at"]
    assert stored.seq == Message.objects.filter(session_id=session["id"]).count()
    finish(run["id"])
    finish(third["id"])
    assert [status for status in Run.objects.filter(session_id=session["id"])
            .order_by("created_at").values_list("status", flat=True)] == ["completed"] * 3
    assert [(text, answer.startswith(f'You said: "{text}"'))
            for text, answer in answered(session["id"])] == [
        ("first", True), ("second", True), ("third", True)]
    assert not PendingMessage.objects.exists()
    assert [e["data"]["status"] for e in alice.client.get(
        f"/v1/runs/{run['id']}/events").json()["results"] if e["type"] == "run.status"] == [
        "pending", "queued", "running", "completed"]


def test_a_message_waits_while_the_active_run_awaits_approval(alice, make_agent, make_session):
    agent = make_agent(alice, config={"interrupt_on": {"word_count": HITL}})
    session = make_session(alice, agent_id=agent["id"])
    _, first = posted(alice, session, "count these words")
    finish(first["id"])
    assert Run.objects.get(pk=first["id"]).status == RunStatus.AWAITING_APPROVAL
    _, waiting = posted(alice, session, "and then this", "enqueue")
    assert waiting["status"] == "pending"
    assert handoff.start_queued(first["id"]) is None  # a paused run is still the active one
    approve = alice.client.post(f"/v1/runs/{first['id']}/approve", {"decisions": [
        {"tool_use_id": "d5_wc", "type": "approve"}]}, format="json")
    assert approve.status_code == 202
    finish(first["id"])
    assert Run.objects.get(pk=first["id"]).status == RunStatus.COMPLETED
    assert Run.objects.get(pk=waiting["id"]).status == RunStatus.QUEUED
    assert_valid_history(session["id"])


def test_a_pending_runs_event_stream_stays_open_while_it_waits(alice, session, hango_settings):
    hango_settings(event_poll_seconds=0.05, event_stream_max_seconds=1)
    posted(alice, session, "first")
    _, waiting = posted(alice, session, "second", "enqueue")
    started = time.monotonic()
    stream = alice.client.get(f"/v1/runs/{waiting['id']}/events", HTTP_ACCEPT="text/event-stream")
    frames = b"".join(stream.streaming_content).decode()
    assert time.monotonic() - started >= 0.9  # open until its time was up, not ended at once
    assert frames.startswith("id: 1\nevent: run.status\n") and '"pending"' in frames


def test_cancelling_a_pending_run_keeps_its_message_and_skips_the_run(alice, session):
    _, first = posted(alice, session, "first")
    _, second = posted(alice, session, "second", "enqueue")
    _, third = posted(alice, session, "third", "enqueue")
    cancelled = alice.client.post(f"/v1/runs/{second['id']}/cancel")
    assert cancelled.status_code == 202
    assert cancelled.json()["status"] == "pending" and cancelled.json()["cancel_requested"]
    assert alice.client.post(f"/v1/runs/{second['id']}/cancel").status_code == 202  # again
    finish(first["id"])
    second_run = Run.objects.get(pk=second["id"])
    assert second_run.status == RunStatus.CANCELLED and second_run.finished_at is not None
    assert second_run.started_at is None and not second_run.cancel_requested
    assert Run.objects.get(pk=third["id"]).status == RunStatus.QUEUED
    assert user_texts(session["id"]) == ["first", "second", "third"]
    finish(third["id"])
    assert answered(session["id"])[-1][1].startswith('You said: "third"')


# -- interrupt -------------------------------------------------------------------------------


def test_interrupt_cancels_a_paused_run_at_once_answering_its_calls_then_starts(
        alice, make_agent, make_session):
    agent = make_agent(alice, config={"interrupt_on": {"word_count": HITL}})
    session = make_session(alice, agent_id=agent["id"])
    _, first = posted(alice, session, "count these words")
    finish(first["id"])
    message, run = posted(alice, session, "never mind", "interrupt")
    assert run["status"] == "queued" and message["seq"] is not None
    paused = Run.objects.get(pk=first["id"])
    assert paused.status == RunStatus.CANCELLED and "pending_batch" not in paused.state_json
    messages = assert_valid_history(session["id"])
    closing, new = messages[-2:]
    assert closing.content == [{"type": "tool_result", "tool_use_id": "d5_wc",
                                "content": CANCELLED_BEFORE_DECISION, "is_error": True}]
    assert (str(new.pk), new.seq) == (message["id"], closing.seq + 1)
    row = AuditEntry.objects.filter(object_id=run["id"]).get()
    assert row.detail == {"session": session["id"], "multitask": "interrupt",
                          "interrupted": first["id"], "message_id": message["id"]}


def test_a_cancel_kept_by_the_turn_that_paused_is_answered_and_the_queue_starts(
        alice, make_agent, make_session):
    # An interrupt posted while the worker was in the turn that paused (past its last cancel
    # check): the pause commits with the cancel still asked and the message waiting behind.
    agent = make_agent(alice, config={"interrupt_on": {"word_count": HITL}})
    session = make_session(alice, agent_id=agent["id"])
    _, first = posted(alice, session, "count these words")
    run = claim_run(first["id"], "worker-a")  # held: the interrupt can only ask it to stop
    message, second = posted(alice, session, "never mind", "interrupt")
    assert second["status"] == "pending" and Run.objects.get(pk=run.pk).cancel_requested
    Run.objects.filter(pk=run.pk).update(cancel_requested=False)  # not seen in the turn ...
    loop, state, next_seq = build_execution(run)
    given = timings()
    control = DbControl(Claim(run.pk, run.epoch), cancel_poll=given.cancel_poll)
    checkpointer = DbCheckpointer(run, control, next_seq, time.monotonic() + 60,
                                  lease=given.lease)
    commit = checkpointer.checkpoint

    def asked_before_the_pause(state, result):  # ... and asked again as the pause commits
        if isinstance(result.next, Interrupted):
            Run.objects.filter(pk=run.pk).update(cancel_requested=True)
        return commit(state, result)

    checkpointer.checkpoint = asked_before_the_pause
    assert loop.run(state, control=control, checkpointer=checkpointer) == Interrupted("paused")
    paused = Run.objects.get(pk=run.pk)
    assert paused.status == RunStatus.AWAITING_APPROVAL and paused.cancel_requested
    # What the task does after a pause (or a redelivery that finds the run paused).
    started = handoff.cancel_kept_by_a_pause(str(run.pk))
    assert started == Run.objects.get(pk=second["id"]).pk
    assert Run.objects.get(pk=run.pk).status == RunStatus.CANCELLED
    assert handoff.cancel_kept_by_a_pause(str(run.pk)) is None  # once
    *_, call, closing, new = assert_valid_history(session["id"])  # the call got its result
    assert [b["type"] for b in call.content] == ["tool_use"]
    assert closing.content[0]["content"] == CANCELLED_BEFORE_DECISION
    assert str(new.pk) == message["id"]
    finish(second["id"])  # the demo asks for the word count again: this agent pauses for it
    assert Run.objects.get(pk=second["id"]).status == RunStatus.AWAITING_APPROVAL
    assert user_texts(session["id"]) == ["count these words", "never mind"]


def test_interrupt_asks_a_running_run_to_stop_at_its_boundary_and_its_end_starts_the_next(
        alice, session):
    _, first = posted(alice, session, "first")
    run = claim_run(first["id"], "worker-a")  # a live worker holds it
    _, second = posted(alice, session, "second", "interrupt")
    assert second["status"] == "pending"
    assert Run.objects.get(pk=first["id"]).cancel_requested
    loop, state, next_seq = build_execution(run)
    given = timings()
    control = DbControl(Claim(run.pk, run.epoch), cancel_poll=given.cancel_poll)
    checkpointer = DbCheckpointer(run, control, next_seq, time.monotonic() + 60,
                                  lease=given.lease)
    # One turn, whose commit reports the cancel; the next turn boundary ends the run.
    assert loop.run(state, control=control, checkpointer=checkpointer) == \
        Interrupted("cancelled")
    assert Run.objects.get(pk=first["id"]).status == RunStatus.CANCELLED
    assert handoff.start_queued(first["id"]) == Run.objects.get(pk=second["id"]).pk
    finish(second["id"])
    assert user_texts(session["id"]) == ["first", "second"]
    assert answered(session["id"])[-1][1].startswith('You said: "second"')


def test_interrupt_behind_pending_runs_cancels_them_and_keeps_their_messages_in_order(
        alice, session):
    _, first = posted(alice, session, "first")
    _, second = posted(alice, session, "second", "enqueue")
    _, third = posted(alice, session, "third", "enqueue")
    message, fourth = posted(alice, session, "fourth", "interrupt")
    # The first run nobody held ended at once; the waiting ones joined the history cancelled.
    assert fourth["status"] == "queued" and message["seq"] == 4
    assert [Run.objects.get(pk=r["id"]).status for r in (first, second, third)] == [
        RunStatus.CANCELLED] * 3
    assert user_texts(session["id"]) == ["first", "second", "third", "fourth"]
    finish(fourth["id"])
    assert answered(session["id"])[-1][1].startswith('You said: "fourth"')


# -- crashes ---------------------------------------------------------------------------------


def test_a_queue_whose_start_was_lost_is_started_by_the_reconciler(alice, session):
    _, first = posted(alice, session, "first")
    _, second = posted(alice, session, "second", "enqueue")
    # The worker ends the run and dies before starting the next one.
    assert worker.execute_run(first["id"]) == worker.Outcome.COMPLETED
    assert Run.objects.get(pk=second["id"]).status == RunStatus.PENDING
    assert tasks.reconcile() == 1
    assert Run.objects.get(pk=second["id"]).status == RunStatus.QUEUED
    assert user_texts(session["id"]) == ["first", "second"]
    assert tasks.reconcile() == 0


def test_a_redelivered_task_of_the_ended_run_starts_the_queue(alice, session):
    _, first = posted(alice, session, "first")
    _, second = posted(alice, session, "second", "enqueue")
    assert worker.execute_run(first["id"]) == worker.Outcome.COMPLETED
    assert tasks.advance_run(first["id"]) == worker.Outcome.SKIPPED
    assert Run.objects.get(pk=second["id"]).status == RunStatus.QUEUED


@pytest.mark.parametrize(("multitask", "status"), [("reject", 409), ("enqueue", 202)])
def test_a_post_finding_the_queue_stalled_starts_it_first(alice, session, multitask, status):
    _, first = posted(alice, session, "first")
    _, second = posted(alice, session, "second", "enqueue")
    assert worker.execute_run(first["id"]) == worker.Outcome.COMPLETED
    response = post(alice, session, "third", multitask)
    assert response.status_code == status, response.content
    assert Run.objects.get(pk=second["id"]).status == RunStatus.QUEUED  # kept, even on a 409
    if status == 409:
        assert response.json()["error"]["detail"] == {"active_run": second["id"]}
    else:
        assert response.json()["run"]["status"] == "pending"
    assert user_texts(session["id"]) == ["first", "second"]


def test_the_schema_describes_multitask_the_pending_status_and_a_waiting_message(db):
    operation = api_schema()["paths"]["/v1/sessions/{session_id}/messages"]["post"]
    body = resolved(operation["requestBody"]["content"]["application/json"]["schema"])
    multitask = body["properties"]["multitask"]
    assert multitask["allOf"][0]["enum"] == ["reject", "enqueue", "interrupt"]
    assert multitask["default"] == "reject" and body["required"] == ["content"]
    answer = resolved(operation["responses"]["202"]["content"]["application/json"]["schema"])
    assert answer["properties"]["message"]["properties"]["seq"]["type"] == ["integer", "null"]
    assert "pending" in json.dumps(answer["properties"]["run"])


def test_deleting_a_waiting_message_in_the_admin_withdraws_its_run(alice, session, staff_client):
    _, first = posted(alice, session, "first")
    _, second = posted(alice, session, "second", "enqueue")
    waiting = PendingMessage.objects.get(run_id=second["id"])
    page = staff_client.post(f"/admin/runs/pendingmessage/{waiting.pk}/delete/", {"post": "yes"})
    assert page.status_code == 302
    assert not Run.objects.filter(pk=second["id"]).exists()  # no pending run left to wait
    assert not PendingMessage.objects.exists()
    finish(first["id"])
    assert user_texts(session["id"]) == ["first"]


def test_sessions_made_at_once_take_different_queue_locks():
    # A time-ordered id's first 32 bits are those of every id made within 65 seconds.
    keys = {queue._lock_key(time_ordered_uuid()) for _ in range(200)}
    assert len(keys) == 200


def test_a_random_session_id_keeps_its_queue_lock():
    # The key an earlier release took for a (version 4) session: the first 32 bits of its id.
    session_id = uuid.UUID("8f0e3a1c-6b2d-4f4e-9a7b-0c1d2e3f4a5b")
    assert queue._lock_key(session_id)[1] == int.from_bytes(session_id.bytes[:4], signed=True)
