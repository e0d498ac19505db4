"""``/v1/sessions``: create, list, read, the active run, and the message list in ``seq`` order."""

from __future__ import annotations

import uuid

import pytest

from runs.models import Message, Run, RunStatus, Session
from tests.support.api import error_of, walk

SESSION_FIELDS = {"id", "agent", "agent_version", "title", "active_run", "created_at",
                  "updated_at"}
MESSAGE_FIELDS = {"id", "seq", "role", "content", "run", "created_at"}


def add_messages(session_id: str, seqs: list[int]) -> None:
    """Messages written straight to the table, in the given (not necessarily seq) order."""
    for seq in seqs:
        Message.objects.create(
            session_id=session_id,
            seq=seq,
            role="user" if seq % 2 else "assistant",
            content=[{"type": "text", "text": f"message {seq}"}],
        )


def test_create_returns_the_session(alice, make_agent):
    agent = make_agent(alice)
    response = alice.client.post("/v1/sessions", {"agent": agent["id"], "title": "Plan"},
                                 format="json")

    assert response.status_code == 201, response.content
    session = response.json()
    assert set(session) == SESSION_FIELDS
    assert session["agent"] == agent["id"]
    assert session["title"] == "Plan"
    assert session["active_run"] is None
    row = Session.objects.get(pk=session["id"])
    assert (row.member_id, row.tenant_id) == (alice.member.id, alice.member.tenant_id)


def test_title_is_optional(alice, make_agent):
    response = alice.client.post("/v1/sessions", {"agent": make_agent(alice)["id"]},
                                 format="json")
    assert response.status_code == 201, response.content
    assert response.json()["title"] == ""


def test_get_one_and_list(alice, make_session):
    first, second = make_session(alice, title="one"), make_session(alice, title="two")
    assert alice.client.get(f"/v1/sessions/{first['id']}").json() == first
    body = alice.client.get("/v1/sessions").json()
    assert set(body) == {"results", "next", "previous"}
    assert body["results"] == [second, first]


def test_list_pages_are_capped(alice, make_agent, make_session, hango_settings):
    hango_settings(page_size=2, max_page_size=2)
    agent_id = make_agent(alice)["id"]
    ids = [make_session(alice, agent_id=agent_id)["id"] for _ in range(5)]
    assert len(alice.client.get("/v1/sessions", {"limit": 50}).json()["results"]) == 2
    items, pages = walk(alice.client, "/v1/sessions?limit=50")
    assert [s["id"] for s in items] == ids[::-1]
    assert pages == 3


def test_active_run_shows_a_running_run(alice, make_session):
    session = make_session(alice)
    run = Run.objects.create(session_id=session["id"], agent_id=session["agent"],
                             status=RunStatus.RUNNING)

    assert alice.client.get(f"/v1/sessions/{session['id']}").json()["active_run"] == str(run.id)
    listed = alice.client.get("/v1/sessions").json()["results"]
    assert [s["active_run"] for s in listed] == [str(run.id)]


@pytest.mark.parametrize("status", [RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED])
def test_finished_run_is_not_active(alice, make_session, status):
    session = make_session(alice)
    Run.objects.create(session_id=session["id"], agent_id=session["agent"], status=status)
    assert alice.client.get(f"/v1/sessions/{session['id']}").json()["active_run"] is None


def test_messages_come_in_seq_order(alice, make_session):
    session = make_session(alice)
    add_messages(session["id"], [3, 1, 5, 2, 4])

    response = alice.client.get(f"/v1/sessions/{session['id']}/messages")
    assert response.status_code == 200
    results = response.json()["results"]
    assert [m["seq"] for m in results] == [1, 2, 3, 4, 5]
    first = results[0]
    assert set(first) == MESSAGE_FIELDS
    assert first["role"] == "user"
    assert first["content"] == [{"type": "text", "text": "message 1"}]
    assert first["run"] is None


def test_messages_are_paginated_in_seq_order(alice, make_session, hango_settings):
    hango_settings(page_size=2, max_page_size=3)
    session = make_session(alice)
    add_messages(session["id"], [7, 3, 1, 6, 5, 2, 4])
    url = f"/v1/sessions/{session['id']}/messages"

    assert [m["seq"] for m in alice.client.get(url).json()["results"]] == [1, 2]
    assert len(alice.client.get(url, {"limit": 100}).json()["results"]) == 3
    items, pages = walk(alice.client, f"{url}?limit=100")
    assert [m["seq"] for m in items] == [1, 2, 3, 4, 5, 6, 7]
    assert pages == 3


def test_messages_of_one_session_only(alice, make_session):
    mine, other = make_session(alice), make_session(alice)
    add_messages(mine["id"], [1, 2])
    add_messages(other["id"], [1])
    results = alice.client.get(f"/v1/sessions/{mine['id']}/messages").json()["results"]
    assert [m["content"][0]["text"] for m in results] == ["message 1", "message 2"]


def test_unusable_agent_is_422_with_one_body(alice, bob, outsider, make_agent):
    """A missing agent, another tenant's and another member's read the same: 422 on ``agent``."""
    candidates = [str(uuid.uuid4()), make_agent(outsider)["id"], make_agent(bob)["id"]]
    responses = [
        alice.client.post("/v1/sessions", {"agent": agent_id, "title": "x"}, format="json")
        for agent_id in candidates
    ]
    for response in responses:
        error = error_of(response, 422, "validation_error")
        assert list(error["detail"]) == ["agent"]
        assert isinstance(error["detail"]["agent"], list) and error["detail"]["agent"]
    assert len({r.content for r in responses}) == 1
    assert not Session.objects.filter(member=alice.member).exists()


@pytest.mark.parametrize("agent", [None, "not-a-uuid", "", -1, ["x"]])
def test_malformed_agent_id_is_422(alice, agent):
    response = alice.client.post("/v1/sessions", {"agent": agent}, format="json")
    error = error_of(response, 422, "validation_error")
    assert list(error["detail"]) == ["agent"]


def test_agent_is_required(alice):
    error = error_of(alice.client.post("/v1/sessions", {"title": "x"}, format="json"), 422)
    assert list(error["detail"]) == ["agent"]
