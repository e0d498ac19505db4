"""Human in the loop through the API: a call needing approval pauses the run; POST …/approve
resumes it once, each decision as it says (cancelling a paused run: test_approvals_cancel.py).

Most tests run inline (the run executes synchronously when its transaction commits, so the POST
that starts or approves a run answers with the run already paused or finished)."""

from __future__ import annotations

import json
import threading
import time

import pytest
import redis
from django.db import connection, transaction

from harness.approvals import REJECTED
from runs.models import Message, Run, RunStatus
from tests.support.approvals import (
    ALL,
    CALL_ID,
    TEXT,
    approve,
    paused_run,
    post,
    statuses,
    tool_result,
)
from tests.support.broker import queued_tasks
from tests.support.history import assert_valid_history
from tests.support.runs import wait_for_run

# -- pausing ---------------------------------------------------------------------------------


def test_a_call_needing_approval_pauses_the_run_with_its_pending_call(alice, hitl_session,
                                                                      inline_runs):
    run = paused_run(alice, hitl_session)
    assert run["pending_approvals"] == [{"tool_use_id": CALL_ID, "name": "word_count",
                                         "input": {"text": TEXT}, "allowed_decisions": ALL,
                                         "reason": "approval"}]
    assert run["finished_at"] is None and run["turn"] == 3
    stored = Run.objects.get(pk=run["id"])
    assert stored.lease_owner == "" and stored.lease_expires_at is None
    assert stored.state_json["pending_batch"]["pending"][0]["tool_use_id"] == CALL_ID
    # The session still has its active run, and the last stored message is the pending call.
    session = alice.client.get(f"/v1/sessions/{hitl_session['id']}").json()
    assert session["active_run"] == run["id"]
    last = Message.objects.filter(session_id=hitl_session["id"]).order_by("-seq").first()
    assert last.role == "assistant" and last.content[-1]["id"] == CALL_ID
    assert post(alice, hitl_session, "another").status_code == 409
    assert statuses(run["id"]) == ["queued", "running", "awaiting_approval"]


def test_approval_requested_reaches_the_events_as_json_and_sse(alice, hitl_session,
                                                               inline_runs):
    run_id = paused_run(alice, hitl_session)["id"]
    page = alice.client.get(f"/v1/runs/{run_id}/events").json()["results"]
    [requested] = [e for e in page if e["type"] == "approval.requested"]
    assert requested["data"] == {"pending": [{"tool_use_id": CALL_ID, "name": "word_count",
                                              "allowed_decisions": ALL,
                                              "reason": "approval"}]}
    assert page[-1]["type"] == "run.status" and page[-1]["data"]["status"] == "awaiting_approval"
    assert approve(alice, run_id, {"tool_use_id": CALL_ID, "type": "approve"}).status_code == 202
    # The stream ends once the run has finished; it carries the request with its seq.
    stream = alice.client.get(f"/v1/runs/{run_id}/events", HTTP_ACCEPT="text/event-stream")
    frames = b"".join(stream.streaming_content).decode().strip().split("\n\n")
    by_type = {f.splitlines()[1].removeprefix("event: "): f for f in frames}
    frame = by_type["approval.requested"]
    assert frame.splitlines()[0] == f"id: {requested['seq']}"
    assert json.loads(frame.splitlines()[2].removeprefix("data: "))["data"] == requested["data"]


# -- each decision resumes the run -----------------------------------------------------------


@pytest.mark.parametrize(("decision", "content", "is_error", "answer"), [
    ({"type": "approve"}, "4", False, "It has 4 words."),
    ({"type": "edit", "input": {"text": "just two"}}, "2", False, "It has 2 words."),
    ({"type": "reject", "message": "not this one"}, f"{REJECTED} Reason: not this one", True,
     "I could not count its words"),
    ({"type": "respond", "message": "nine"}, "nine", False, "It has nine words."),
])
def test_each_decision_resumes_the_run_to_completion(alice, hitl_session, inline_runs,
                                                     decision, content, is_error, answer):
    run_id = paused_run(alice, hitl_session)["id"]
    response = approve(alice, run_id, {"tool_use_id": CALL_ID, **decision})
    assert response.status_code == 202, response.content
    run = response.json()
    assert run["status"] == "completed" and run["pending_approvals"] == []
    assert run["finished_at"] is not None and run["error"] is None
    result = tool_result(hitl_session["id"])
    assert (result["content"], result["is_error"]) == (content, is_error)
    messages = assert_valid_history(hitl_session["id"])
    assert answer in messages[-1].content[0]["text"]
    assert "pending_batch" not in Run.objects.get(pk=run_id).state_json
    assert statuses(run_id) == ["queued", "running", "awaiting_approval", "queued", "running",
                                "completed"]


def stored_call(session_id, call_id=CALL_ID) -> tuple[int, dict]:
    """The seq of the stored message holding the call, and the call."""
    for message in Message.objects.filter(session_id=session_id).order_by("seq"):
        for block in message.content:
            if block["type"] == "tool_use" and block["id"] == call_id:
                return message.seq, block
    raise AssertionError(f"no call {call_id}")


def decided_events(caller, run_id) -> list[dict]:
    events = caller.client.get(f"/v1/runs/{run_id}/events").json()["results"]
    return [e["data"] for e in events if e["type"] == "approval.decided"]


def test_an_edit_rewrites_the_stored_call_and_its_event_keeps_the_original(
        alice, hitl_session, inline_runs):
    run_id = paused_run(alice, hitl_session)["id"]
    edited = {"text": "just two"}
    response = approve(alice, run_id, {"tool_use_id": CALL_ID, "type": "edit", "input": edited})
    assert response.status_code == 202 and response.json()["status"] == "completed"
    # The history shows what ran: the stored call, the message list and the inspector.
    seq, call = stored_call(hitl_session["id"])
    assert call["input"] == edited and tool_result(hitl_session["id"])["content"] == "2"
    listed = alice.client.get(f"/v1/sessions/{hitl_session['id']}/messages").json()["results"]
    [shown] = [b for m in listed if m["seq"] == seq for b in m["content"]
               if b["type"] == "tool_use"]
    assert shown["input"] == edited
    inspected = alice.client.get(f"/v1/sessions/{hitl_session['id']}/context").json()
    [part] = [p for p in inspected["messages"] if p["id"] == f"message:{seq}"]
    assert "just two" in part["preview"] and TEXT not in part["preview"]
    full = alice.client.get(f"/v1/sessions/{hitl_session['id']}/context?full=message:{seq}")
    assert json.loads(full.json()["content"])[-1]["input"] == edited
    # The model's own arguments are kept in the run's events.
    assert decided_events(alice, run_id) == [{"decisions": [{
        "tool_use_id": CALL_ID, "name": "word_count", "type": "edit",
        "original_input": {"text": TEXT}, "input": edited}]}]
    assert_valid_history(hitl_session["id"])


@pytest.mark.parametrize(("decision", "recorded"), [
    ({"type": "approve"}, {}),
    ({"type": "reject", "message": "not this one"}, {"message": "not this one"}),
    ({"type": "respond", "message": "nine"}, {"message": "nine"}),
])
def test_other_decisions_leave_the_stored_call_as_the_model_made_it(
        alice, hitl_session, inline_runs, decision, recorded):
    run_id = paused_run(alice, hitl_session)["id"]
    assert approve(alice, run_id, {"tool_use_id": CALL_ID, **decision}).status_code == 202
    assert stored_call(hitl_session["id"])[1]["input"] == {"text": TEXT}
    assert decided_events(alice, run_id) == [{"decisions": [{
        "tool_use_id": CALL_ID, "name": "word_count", "type": decision["type"], **recorded}]}]


def test_an_invalid_edit_becomes_an_error_result_and_the_run_goes_on(alice, hitl_session,
                                                                     inline_runs):
    run_id = paused_run(alice, hitl_session)["id"]
    response = approve(alice, run_id, {"tool_use_id": CALL_ID, "type": "edit",
                                       "input": {"words": 3}})
    assert response.status_code == 202 and response.json()["status"] == "completed"
    result = tool_result(hitl_session["id"])
    assert result["is_error"] and result["content"].startswith("Invalid arguments for word_count")
    assert_valid_history(hitl_session["id"])


# -- refusals --------------------------------------------------------------------------------


def lock_waiters() -> int:
    """Backends of this test database waiting for a lock (read fresh: inside a transaction,
    pg_stat_activity is otherwise a snapshot taken at its first read)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute("SELECT count(*) FROM pg_stat_activity "
                       "WHERE datname = current_database() AND wait_event_type = 'Lock'")
        return cursor.fetchone()[0]


@pytest.mark.postgresql(reason="two approvals racing on two connections, row locks")
def test_double_approve_resumes_once_and_the_other_answers_409(alice, hitl_session,
                                                               inline_runs):
    run_id = paused_run(alice, hitl_session)["id"]
    codes: list[int] = []

    def decide(body: dict) -> None:
        try:
            codes.append(approve(alice, run_id, {"tool_use_id": CALL_ID, **body}).status_code)
        finally:
            connection.close()  # this thread's own connection

    bodies = [{"type": "approve"}, {"type": "reject", "message": "no"}]
    threads = [threading.Thread(target=decide, args=(b,)) for b in bodies]
    # Hold the run's row so both requests are inside run_approve, waiting on the same lock,
    # before either can go on: a real race, decided by the lock and the status check.
    with transaction.atomic():
        Run.objects.select_for_update().get(pk=run_id)
        for t in threads:
            t.start()
        deadline = time.monotonic() + 30
        while lock_waiters() < 2:
            assert time.monotonic() < deadline, "the approvals never reached the row lock"
            time.sleep(0.02)
    for t in threads:
        t.join(timeout=60)
    assert sorted(codes) == [202, 409]
    run = wait_for_run(run_id)
    assert run.status == "completed"
    # One resume: one queued → running after the pause, one result for the call.
    assert statuses(run_id) == ["queued", "running", "awaiting_approval", "queued", "running",
                                "completed"]
    messages = assert_valid_history(hitl_session["id"])
    results = [b for m in messages for b in m.content
               if b["type"] == "tool_result" and b["tool_use_id"] == CALL_ID]
    assert len(results) == 1


def test_approve_on_a_run_not_awaiting_approval_answers_409(alice, hitl_session, make_session,
                                                            inline_runs):
    run_id = paused_run(alice, hitl_session)["id"]
    decision = {"tool_use_id": CALL_ID, "type": "approve"}
    assert approve(alice, run_id, decision).status_code == 202
    again = approve(alice, run_id, decision)
    assert again.status_code == 409
    assert again.json()["error"]["detail"] == {"status": "completed"}
    plain = post(alice, make_session(alice)).json()["run"]  # an agent without interrupt_on
    assert plain["status"] == "completed"
    assert approve(alice, plain["id"], decision).status_code == 409


@pytest.mark.parametrize(("decisions", "where"), [
    ([], "decisions"),
    ([{"tool_use_id": CALL_ID, "type": "maybe"}], "type"),
    ([{"tool_use_id": CALL_ID, "type": "edit"}], "input"),
    ([{"tool_use_id": CALL_ID, "type": "edit", "input": "text"}], "input"),
    ([{"tool_use_id": CALL_ID, "type": "approve", "input": {"text": "x"}}], "input"),
    ([{"tool_use_id": CALL_ID, "type": "approve", "message": "fine"}], "message"),
    ([{"tool_use_id": CALL_ID, "type": "respond"}], "message"),
    ([{"tool_use_id": CALL_ID, "type": "respond", "message": "  "}], "message"),
    ([{"type": "approve"}], "tool_use_id"),
    ([{"tool_use_id": "other", "type": "approve"}], "not a pending tool call"),
    ([{"tool_use_id": CALL_ID, "type": "approve"}, {"tool_use_id": CALL_ID, "type": "approve"}],
     "more than one decision"),
    ([{"tool_use_id": CALL_ID, "type": "approve"}, {"tool_use_id": "x", "type": "approve"}],
     "not a pending tool call"),
])
def test_bad_decisions_answer_422_and_leave_the_run_paused(alice, hitl_session, inline_runs,
                                                           decisions, where):
    run_id = paused_run(alice, hitl_session)["id"]
    response = approve(alice, run_id, *decisions)
    assert response.status_code == 422, response.content
    body = response.json()["error"]
    assert body["code"] == "validation_error"
    assert where in json.dumps(body["detail"])
    run = Run.objects.get(pk=run_id)
    assert run.status == "awaiting_approval"
    assert run.state_json["pending_batch"]["decisions"] == {}


def test_a_decision_outside_the_calls_allowed_decisions_answers_422(alice, make_agent,
                                                                     make_session, inline_runs):
    agent = make_agent(alice, config={"interrupt_on": {"word_count": ["approve", "reject"]}})
    session = make_session(alice, agent_id=agent["id"])
    run = paused_run(alice, session)
    assert run["pending_approvals"][0]["allowed_decisions"] == ["approve", "reject"]
    response = approve(alice, run["id"], {"tool_use_id": CALL_ID, "type": "respond",
                                          "message": "42"})
    assert response.status_code == 422
    assert "allows ['approve', 'reject'], not 'respond'" in response.json()["error"]["detail"][
        "decisions"][0]
    missing = alice.client.post(f"/v1/runs/{run['id']}/approve", {}, format="json")
    assert missing.status_code == 422
    assert Run.objects.get(pk=run["id"]).status == "awaiting_approval"


def test_approve_is_authorized_like_the_other_run_routes(alice, bob, admin, outsider,
                                                         hitl_session, inline_runs, anon):
    run_id = paused_run(alice, hitl_session)["id"]
    decision = {"tool_use_id": CALL_ID, "type": "approve"}
    assert approve(bob, run_id, decision).status_code == 404
    assert approve(outsider, run_id, decision).status_code == 404
    assert approve(bob, "00000000-0000-0000-0000-000000000000", decision).status_code == 404
    assert anon.post(f"/v1/runs/{run_id}/approve", {"decisions": [decision]},
                     format="json").status_code == 401
    assert Run.objects.get(pk=run_id).status == "awaiting_approval"
    assert approve(admin, run_id, decision).status_code == 202  # admins see the tenant's runs


# -- a real worker ---------------------------------------------------------------------------


@pytest.mark.postgresql(reason="a Celery worker in another process")
@pytest.mark.slow
def test_a_paused_run_holds_no_broker_message_and_approval_resumes_it_on_the_worker(
        alice, hitl_session, start_worker, broker):
    worker = start_worker()
    run_id = post(alice, hitl_session).json()["run"]["id"]
    run = wait_for_run(run_id, lambda r: r.status not in (RunStatus.QUEUED, RunStatus.RUNNING))
    assert run.status == RunStatus.AWAITING_APPROVAL
    worker.wait_for(lambda log: "'paused'" in log, what="the task to end")
    assert queued_tasks(broker) == 0
    # Not even delivered and held by the worker.
    assert redis.Redis.from_url(broker).hlen("unacked") == 0
    assert run.finished_at is None and run.lease_expires_at is None

    response = approve(alice, run_id, {"tool_use_id": CALL_ID, "type": "edit",
                                       "input": {"text": "one two three"}})
    # The answer is the run as read after the commit that queued it: the idle worker may have
    # taken it already (the answer is no longer awaiting approval either way).
    assert response.status_code == 202
    assert response.json()["status"] in ("queued", "running", "completed")
    run = wait_for_run(run_id)
    assert run.status == RunStatus.COMPLETED, run.error
    # The task logs its result after the run's end committed: wait for the line.
    worker.wait_for(lambda log: len(worker.task_results()) >= 2, what="two task results")
    assert worker.task_results() == ["paused", "completed"]
    assert tool_result(hitl_session["id"])["content"] == "3"
    assert stored_call(hitl_session["id"])[1]["input"] == {"text": "one two three"}
    messages = assert_valid_history(hitl_session["id"])
    assert "It has 3 words." in messages[-1].content[0]["text"]
