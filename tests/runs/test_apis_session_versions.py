"""A session's pin to a version of its agent: set at creation or by PATCH, checked, shown."""

from __future__ import annotations

from accounts.models import AuditEntry
from runs.models import Session
from tests.support.api import error_of


def test_a_session_pins_an_existing_version_and_unpins_with_null(alice, make_agent):
    agent = make_agent(alice)
    alice.client.patch(f"/v1/agents/{agent['id']}", {"system_prompt": "Two."}, format="json")
    created = alice.client.post("/v1/sessions", {"agent": agent["id"], "agent_version": 1},
                                format="json")
    assert created.status_code == 201, created.content
    session = created.json()
    assert session["agent_version"] == 1

    moved = alice.client.patch(f"/v1/sessions/{session['id']}", {"agent_version": 2},
                               format="json")
    assert moved.status_code == 200, moved.content
    assert moved.json()["agent_version"] == 2
    assert Session.objects.get(pk=session["id"]).agent_version == 2
    unpinned = alice.client.patch(f"/v1/sessions/{session['id']}", {"agent_version": None},
                                  format="json")
    assert unpinned.json()["agent_version"] is None
    retitled = alice.client.patch(f"/v1/sessions/{session['id']}", {"title": "New"},
                                  format="json")
    assert (retitled.json()["title"], retitled.json()["agent_version"]) == ("New", None)
    audit = AuditEntry.objects.filter(object_id=session["id"], action="session.update")
    assert audit.count() == 3


def test_a_version_the_agent_does_not_have_is_a_422_naming_the_field(alice, make_agent):
    agent = make_agent(alice)
    response = alice.client.post("/v1/sessions", {"agent": agent["id"], "agent_version": 2},
                                 format="json")
    assert "agent_version" in error_of(response, 422)["detail"]
    session = alice.client.post("/v1/sessions", {"agent": agent["id"]}, format="json").json()
    for bad in (7, 0, "1", True):
        response = alice.client.patch(f"/v1/sessions/{session['id']}", {"agent_version": bad},
                                      format="json")
        assert response.status_code in (400, 422), (bad, response.content)
        assert "agent_version" in str(response.json()), bad
    assert Session.objects.get(pk=session["id"]).agent_version is None


def test_another_members_session_is_a_404(alice, bob, make_session):
    session = make_session(alice)
    response = bob.client.patch(f"/v1/sessions/{session['id']}", {"agent_version": 1},
                                format="json")
    assert response.status_code == 404
