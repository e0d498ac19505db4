"""Client tools on real worker processes (Redis, PostgreSQL): a run parked on the caller's tool
calls goes on once answered — in parts, answered twice at once, left to expire, cancelled,
after its worker was killed, beside a built-in and an approval-held call of the same batch —
and a hundred parked runs answered at once are each resumed exactly once."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection
from rest_framework.test import APIClient

from harness.approvals import CANCELLED_BEFORE_RESULT
from harness.client_calls import NO_RESULT
from runs.models import Message, Run, RunEvent
from tests.support.approvals import statuses
from tests.support.history import assert_valid_history
from tests.support.runs import wait_for_run
from tests.support.threads import at_once

pytestmark = pytest.mark.slow

LOOKUP = {"name": "lookup_order", "description": "Find an order by its number.",
          "input_schema": {"type": "object", "properties": {"order": {"type": "integer"}},
                           "required": ["order"]}}
ONE = 'call lookup_order {"order": 42}'
TWO = 'call lookup_order {"order": 1} ; call lookup_order {"order": 2}'
RESUMED_ONCE = ["queued", "running", "requires_action", "queued", "running", "completed"]


@pytest.fixture
def agent(alice, make_agent):
    return make_agent(alice, model="scripted:calls", config={
        "client_tools": [LOOKUP], "interrupt_on": {"word_count": ["approve"]}})


def start(caller, agent_id: str, content: str = ONE) -> str:
    session = caller.client.post("/v1/sessions", {"agent": agent_id}, format="json").json()
    posted = caller.client.post(f"/v1/sessions/{session['id']}/messages", {"content": content},
                                format="json")
    assert posted.status_code == 202, posted.content
    return posted.json()["run"]["id"]


def parked(run_id: str, status: str = "requires_action", timeout: float = 60) -> dict:
    wait_for_run(run_id, lambda r: r.status == status, timeout=timeout)
    return Run.objects.get(pk=run_id)


def waiting_ids(caller, run_id: str) -> list[str]:
    run = caller.client.get(f"/v1/runs/{run_id}").json()
    return [c["tool_use_id"] for c in run["required_action"]["tool_calls"]]


def submit(caller, run_id: str, *answers: tuple[str, str], client=None):
    results = [{"tool_use_id": i, "output": text} for i, text in answers]
    return (client or caller.client).post(f"/v1/runs/{run_id}/tool-results",
                                          {"results": results}, format="json")


def results_for(run: Run, call_id: str) -> list[dict]:
    """Every tool_result block of the run's session that answers ``call_id``."""
    return [b for m in Message.objects.filter(session_id=run.session_id)
            for b in m.content if b.get("tool_use_id") == call_id and b["type"] == "tool_result"]


def answer_text(run: Run) -> str:
    return Message.objects.filter(session_id=run.session_id).order_by("-seq")[0] \
        .content[0]["text"]


def fresh_client(caller) -> APIClient:
    """A client of the caller's own for a thread (a test client is not shared across them)."""
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {caller.key}")
    return client


def test_answered_in_parts_the_last_answer_sent_at_once_is_stored_once(alice, agent,
                                                                       start_worker):
    start_worker("w1")
    run_id = start(alice, agent["id"], TWO)
    parked(run_id)
    first, second = waiting_ids(alice, run_id)
    assert submit(alice, run_id, (second, "two ships")).json()["status"] == "requires_action"
    assert Run.objects.get(pk=run_id).status == "requires_action"  # no worker took it
    assert waiting_ids(alice, run_id) == [first]

    def send() -> int:
        return submit(alice, run_id, (first, "one ships"), client=fresh_client(alice)).status_code

    # The last answer sent four times at once (a client retrying): one is taken.
    assert sorted(at_once(send, count=4)) == [200, 409, 409, 409]
    run = wait_for_run(run_id)
    assert run.status == "completed", run.error
    assert "lookup_order: one ships" in answer_text(run)
    assert "lookup_order: two ships" in answer_text(run)
    assert len(results_for(run, first)) == len(results_for(run, second)) == 1
    assert statuses(run_id) == RESUMED_ONCE
    assert RunEvent.objects.filter(run_id=run_id, type="tool_results.submitted").count() == 2
    assert_valid_history(run.session_id)


def test_a_parked_run_left_alone_expires_and_one_cancelled_is_closed(alice, agent, make_agent,
                                                                     start_worker):
    brief = make_agent(alice, model="scripted:calls",
                       config={"client_tools": [LOOKUP], "client_tool_timeout": 1})
    start_worker("w1")
    left, cancelled = start(alice, brief["id"]), start(alice, agent["id"])
    parked(cancelled)
    [call] = waiting_ids(alice, cancelled)
    assert alice.client.post(f"/v1/runs/{cancelled}/cancel").json()["status"] == "cancelled"
    run = Run.objects.get(pk=cancelled)
    [result] = results_for(run, call)
    assert result["content"] == CANCELLED_BEFORE_RESULT
    assert_valid_history(run.session_id)
    again = alice.client.post(f"/v1/sessions/{run.session_id}/messages", {"content": ONE},
                              format="json")
    assert again.status_code == 202, again.content  # the session goes on
    parked(again.json()["run"]["id"])

    # The worker's reconciler thread answers the other one's call as failed, a second after.
    run = wait_for_run(left, timeout=20)
    assert run.status == "completed", run.error
    [late] = RunEvent.objects.get(run_id=left, type="tool_results.expired").data["tool_use_ids"]
    [result] = results_for(run, late)
    assert result["content"] == NO_RESULT and result["is_error"] is True
    assert f"lookup_order (error): {NO_RESULT}" in answer_text(run)
    assert statuses(left) == RESUMED_ONCE
    # Too late: the caller's answer is refused, not stored.
    assert submit(alice, left, (late, "late")).status_code == 409


def test_kill_9_while_parked_then_answered_resumes_on_another_worker_once(alice, agent,
                                                                           start_worker):
    doomed = start_worker("doomed")
    run_id = start(alice, agent["id"])
    run = parked(run_id)
    [call] = waiting_ids(alice, run_id)
    doomed.kill()
    assert submit(alice, run_id, (call, "ships today")).status_code == 200
    start_worker("heir")
    run = wait_for_run(run_id)
    assert run.status == "completed", run.error
    assert len(results_for(run, call)) == 1 and "lookup_order: ships today" in answer_text(run)
    assert statuses(run_id) == RESUMED_ONCE


def test_a_batch_of_a_built_in_an_approval_held_and_a_client_call(alice, agent, start_worker):
    start_worker("w1")
    run_id = start(alice, agent["id"],
                   'call echo {"text": "hi"} ; call word_count {"text": "a b c"} ; ' + ONE)
    parked(run_id, "awaiting_approval")
    view = alice.client.get(f"/v1/runs/{run_id}").json()
    [held] = view["pending_approvals"]
    [call] = waiting_ids(alice, run_id)
    approved = alice.client.post(f"/v1/runs/{run_id}/approve", {"decisions": [
        {"tool_use_id": held["tool_use_id"], "type": "approve"}]}, format="json")
    assert approved.json()["status"] == "requires_action", approved.content
    assert submit(alice, run_id, (call, "found")).json()["status"] == "queued"
    run = wait_for_run(run_id)
    assert run.status == "completed", run.error
    text = answer_text(run)
    assert "echo: hi" in text and "word_count: 3" in text and "lookup_order: found" in text
    assert statuses(run_id) == ["queued", "running", "awaiting_approval", "requires_action",
                                "queued", "running", "completed"]
    assert_valid_history(run.session_id)


def test_a_hundred_parked_runs_answered_at_once_each_resume_once(alice, agent, start_worker):
    start_worker("w1")
    runs = [start(alice, agent["id"]) for _ in range(100)]
    for run_id in runs:
        parked(run_id)
    calls = {run_id: waiting_ids(alice, run_id)[0] for run_id in runs}

    def answer(run_id: str) -> int:
        try:
            return submit(alice, run_id, (calls[run_id], f"order of {run_id}"),
                          client=fresh_client(alice)).status_code
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=8) as pool:
        assert list(pool.map(answer, runs)) == [200] * 100
    for run_id in runs:
        run = wait_for_run(run_id, timeout=120)
        assert run.status == "completed", (run_id, run.error)
        assert statuses(run_id) == RESUMED_ONCE, run_id
        [result] = results_for(run, calls[run_id])
        assert result["content"] == f"order of {run_id}"
