"""The inspector shows the agent's version a run would execute: a pinned session's pin, an
unpinned one's latest, and an active run's own version (the one it was made with)."""

from __future__ import annotations

import pytest


def agent_prompt(caller, session_id: str) -> str:
    response = caller.client.get(f"/v1/sessions/{session_id}/context?full=system:agent")
    assert response.status_code == 200, response.content
    return response.json()["content"]


def patch_prompt(caller, agent_id: str, prompt: str) -> None:
    response = caller.client.patch(f"/v1/agents/{agent_id}", {"system_prompt": prompt},
                                   format="json")
    assert response.status_code == 200, response.content


@pytest.fixture
def moved_on(alice, make_agent) -> str:
    """An agent whose version 1 says "One." and version 2 "Two."."""
    agent = make_agent(alice, system_prompt="One.")
    patch_prompt(alice, agent["id"], "Two.")
    return agent["id"]


def test_a_pinned_session_shows_its_pin_and_an_unpinned_one_the_latest(alice, make_session,
                                                                       moved_on):
    pinned = alice.client.post("/v1/sessions", {"agent": moved_on, "agent_version": 1},
                               format="json").json()
    latest = make_session(alice, agent_id=moved_on)

    assert agent_prompt(alice, pinned["id"]) == "One."
    assert agent_prompt(alice, latest["id"]) == "Two."


def test_an_active_run_shows_the_version_it_was_made_with(alice, make_session, moved_on,
                                                          hango_settings):
    hango_settings(run_inline=False, broker_url="")  # the run stays queued
    session = make_session(alice, agent_id=moved_on)
    posted = alice.client.post(f"/v1/sessions/{session['id']}/messages", {"content": "hi"},
                               format="json")
    assert posted.json()["run"]["agent_version"] == 2
    patch_prompt(alice, moved_on, "Three.")

    assert agent_prompt(alice, session["id"]) == "Two."
    alice.client.post(f"/v1/runs/{posted.json()['run']['id']}/cancel")
    assert agent_prompt(alice, session["id"]) == "Three."
