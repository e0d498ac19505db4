"""Agent versions through real runs on a real Celery worker: a run executes the version it was
made with, whatever the agent became before a worker took it; a pinned session's runs execute
its pin; an unpinned one's the latest."""

from __future__ import annotations

import pytest

from runs.models import Message
from tests.support.runs import wait_for_run

pytestmark = pytest.mark.slow

DEMO_ANSWER = 'You said: "hello"'  # scripted:demo's last words
WORKLOAD_ANSWER = "All 1 steps done."  # scripted:workload-1's


def post(caller, session_id: str) -> dict:
    response = caller.client.post(f"/v1/sessions/{session_id}/messages", {"content": "hello"},
                                  format="json")
    assert response.status_code == 202, response.content
    return response.json()["run"]


def new_session(caller, agent_id: str, **pin) -> str:
    response = caller.client.post("/v1/sessions", {"agent": agent_id, **pin}, format="json")
    assert response.status_code == 201, response.content
    return response.json()["id"]


def answer(session_id: str) -> str:
    last = Message.objects.filter(session_id=session_id).order_by("-seq").first()
    assert last is not None and last.role == "assistant"
    return last.content[0]["text"]


def test_a_run_executes_the_version_it_was_made_with(alice, make_agent, start_worker):
    agent = make_agent(alice, model="scripted:demo", system_prompt="Version one.")
    queued_session = new_session(alice, agent["id"])
    queued = post(alice, queued_session)  # no worker yet: it waits in the queue
    assert queued["agent_version"] == 1

    changed = alice.client.patch(f"/v1/agents/{agent['id']}",
                                 {"model": "scripted:workload-1", "system_prompt": "Two."},
                                 format="json")
    assert changed.status_code == 200, changed.content
    pinned_session = new_session(alice, agent["id"], agent_version=1)
    pinned = post(alice, pinned_session)
    latest_session = new_session(alice, agent["id"])
    latest = post(alice, latest_session)
    assert (pinned["agent_version"], latest["agent_version"]) == (1, 2)

    start_worker()
    for run in (queued, pinned, latest):
        done = wait_for_run(run["id"])
        assert done.status == "completed", done.error

    assert answer(queued_session).startswith(DEMO_ANSWER)
    assert answer(pinned_session).startswith(DEMO_ANSWER)
    assert answer(latest_session) == WORKLOAD_ANSWER
    shown = alice.client.get(f"/v1/runs/{queued['id']}").json()
    assert (shown["agent_version"], shown["status"]) == (1, "completed")
