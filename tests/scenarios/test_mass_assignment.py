"""Server-owned fields (id, tenant, owner/member, timestamps, active_run) cannot be written:
sending them changes nothing, on every route that takes a body."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from agents.models import Agent
from runs.models import Run, Session
from tests.support.api import AGENT_BODY

PAST = "2001-02-03T04:05:06Z"


@pytest.fixture
def extras(other_tenant, bob):
    """Fields a client might try to set; every value points somewhere it must not."""
    return {
        "id": str(uuid.uuid4()),
        "tenant": str(other_tenant.id),
        "tenant_id": str(other_tenant.id),
        "owner": str(bob.member.id),
        "owner_id": str(bob.member.id),
        "member": str(bob.member.id),
        "member_id": str(bob.member.id),
        "created_at": PAST,
        "updated_at": PAST,
        "active_run": str(uuid.uuid4()),
    }


def assert_fresh(row, since) -> None:
    assert row.created_at >= since
    assert row.updated_at >= since


def test_create_agent_ignores_server_fields(alice, extras):
    since = timezone.now() - timedelta(seconds=1)
    response = alice.client.post("/v1/agents", {**AGENT_BODY, **extras}, format="json")

    assert response.status_code == 201, response.content
    body = response.json()
    row = Agent.objects.get(pk=body["id"])
    assert str(row.id) != extras["id"]
    assert not Agent.objects.filter(pk=extras["id"]).exists()
    assert row.tenant_id == alice.member.tenant_id
    assert row.owner_id == alice.member.id
    assert body["owner"] == str(alice.member.id)
    assert_fresh(row, since)
    assert "tenant" not in body and "active_run" not in body


@pytest.mark.parametrize("field", ["id", "tenant", "tenant_id", "owner", "owner_id", "created_at",
                                   "updated_at", "member"])
def test_update_agent_ignores_each_server_field(alice, make_agent, extras, field):
    agent = make_agent(alice)
    before = Agent.objects.values().get(pk=agent["id"])

    response = alice.client.patch(f"/v1/agents/{agent['id']}", {field: extras[field]},
                                  format="json")

    assert response.status_code == 200, response.content
    after = Agent.objects.values().get(pk=agent["id"])
    assert after == before  # nothing writable was sent, so nothing at all changed
    assert response.json() == agent


def test_update_agent_keeps_server_fields_alongside_a_real_change(alice, make_agent, extras):
    agent = make_agent(alice)
    before = Agent.objects.get(pk=agent["id"])

    response = alice.client.patch(f"/v1/agents/{agent['id']}", {"name": "new", **extras},
                                  format="json")

    assert response.status_code == 200, response.content
    row = Agent.objects.get(pk=agent["id"])
    assert row.name == "new"
    assert (row.tenant_id, row.owner_id, row.created_at) == (
        before.tenant_id, before.owner_id, before.created_at)
    assert row.updated_at > before.updated_at
    assert not Agent.objects.filter(pk=extras["id"]).exists()
    assert Agent.objects.filter(tenant_id=alice.member.tenant_id).count() == 1


def test_create_session_ignores_server_fields(alice, make_agent, extras):
    agent = make_agent(alice)
    since = timezone.now() - timedelta(seconds=1)

    response = alice.client.post("/v1/sessions", {"agent": agent["id"], "title": "t", **extras},
                                 format="json")

    assert response.status_code == 201, response.content
    body = response.json()
    row = Session.objects.get(pk=body["id"])
    assert str(row.id) != extras["id"]
    assert (row.tenant_id, row.member_id, row.agent_id) == (
        alice.member.tenant_id, alice.member.id, uuid.UUID(agent["id"]))
    assert_fresh(row, since)
    assert body["active_run"] is None
    assert not Run.objects.filter(session_id=row.id).exists()


@pytest.mark.parametrize("field, value", [("status", "completed"), ("turn", 9),
                                          ("state_json", {"x": 1}), ("role", "owner")])
def test_unknown_fields_are_ignored_not_stored(alice, make_agent, field, value):
    agent = make_agent(alice, **{field: value})
    assert field not in agent
    row = Agent.objects.values().get(pk=agent["id"])
    assert field not in row
    alice.member.refresh_from_db()
    assert alice.member.role == "member"
