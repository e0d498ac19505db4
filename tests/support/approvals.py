"""What the approval tests share (tests/scenarios/test_approvals*.py; their session, an agent
that asks before counting words, is ``hitl_session`` in tests/scenarios/conftest.py): the calls
that pause, approve and read it."""

from __future__ import annotations

from runs.models import Message, RunEvent

ALL = ["approve", "edit", "reject", "respond"]
TEXT = "count these four words"
CALL_ID = "d5_wc"  # the demo script's word_count call (its 3rd step, 5 messages in)


def post(caller, session, content=TEXT):
    return caller.client.post(f"/v1/sessions/{session['id']}/messages", {"content": content},
                              format="json")


def approve(caller, run_id, *decisions):
    return caller.client.post(f"/v1/runs/{run_id}/approve", {"decisions": list(decisions)},
                              format="json")


def paused_run(caller, session) -> dict:
    response = post(caller, session)
    assert response.status_code == 202, response.content
    run = response.json()["run"]
    assert run["status"] == "awaiting_approval", run
    return run


def tool_result(session_id, call_id=CALL_ID) -> dict:
    for message in Message.objects.filter(session_id=session_id).order_by("seq"):
        for block in message.content:
            if block["type"] == "tool_result" and block["tool_use_id"] == call_id:
                return block
    raise AssertionError(f"no result for {call_id}")


def statuses(run_id) -> list[str]:
    return [e.data["status"] for e in
            RunEvent.objects.filter(run_id=run_id, type="run.status").order_by("seq")]
