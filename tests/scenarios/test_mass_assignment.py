"""Server-owned fields (id, tenant, owner/member, timestamps, active_run) cannot be written:
sending them is a 422 naming each of them, on every route that takes a body, and nothing at all
is written — not even the body's other, valid changes."""

from __future__ import annotations

import uuid

import pytest

from accounts.models import TenantPrice
from agents.models import Agent, MemoryFile, Skill
from context.models import ContextOverride
from runs.models import Message, Run, Session
from schedules.models import Schedule
from tests.support.api import AGENT_BODY, error_of
from tests.support.openapi import Operation, body_operations, valid_body
from webhooks.models import Endpoint

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


def refused(response, names) -> None:
    """``response`` is a 422 naming exactly ``names``, each an unknown field."""
    error = error_of(response, 422, "validation_error")
    assert error["detail"] == {name: ["Unknown field."] for name in names}, error


def everything() -> list[list[dict]]:
    models = (Agent, MemoryFile, Skill, Session, Message, Run, ContextOverride, Endpoint,
              Schedule, TenantPrice)
    return [list(model.objects.order_by("pk").values()) for model in models]


def test_create_agent_refuses_server_fields(alice, extras):
    response = alice.client.post("/v1/agents", {**AGENT_BODY, **extras}, format="json")

    refused(response, extras)
    assert not Agent.objects.exists()


@pytest.mark.parametrize("field", ["id", "tenant", "tenant_id", "owner", "owner_id", "created_at",
                                   "updated_at", "member"])
def test_update_agent_refuses_each_server_field(alice, make_agent, extras, field):
    agent = make_agent(alice)
    before = Agent.objects.values().get(pk=agent["id"])

    response = alice.client.patch(f"/v1/agents/{agent['id']}", {field: extras[field]},
                                  format="json")

    refused(response, [field])
    assert Agent.objects.values().get(pk=agent["id"]) == before
    assert alice.client.get(f"/v1/agents/{agent['id']}").json() == agent


def test_update_agent_with_server_fields_writes_not_even_the_real_change(alice, make_agent,
                                                                           extras):
    agent = make_agent(alice)
    before = Agent.objects.values().get(pk=agent["id"])

    response = alice.client.patch(f"/v1/agents/{agent['id']}", {"name": "new", **extras},
                                  format="json")

    refused(response, extras)
    assert Agent.objects.values().get(pk=agent["id"]) == before
    assert not Agent.objects.filter(pk=extras["id"]).exists()


def test_create_session_refuses_server_fields(alice, make_agent, extras):
    agent = make_agent(alice)

    response = alice.client.post("/v1/sessions", {"agent": agent["id"], "title": "t", **extras},
                                 format="json")

    refused(response, extras)
    assert not Session.objects.exists() and not Run.objects.exists()


@pytest.mark.parametrize("field, value", [("status", "completed"), ("turn", 9),
                                          ("state_json", {"x": 1}), ("role", "owner")])
def test_fields_of_other_objects_are_refused_not_stored(alice, field, value):
    response = alice.client.post("/v1/agents", {**AGENT_BODY, field: value}, format="json")

    refused(response, [field])
    assert not Agent.objects.exists()
    alice.member.refresh_from_db()
    assert alice.member.role == "member"


@pytest.mark.parametrize("operation", body_operations(), ids=str)
def test_every_body_refuses_the_server_fields(alice, route_ids, extras, operation: Operation):
    body = valid_body(operation, route_ids)
    before = everything()
    # A list body (a set of overrides) holds objects: the fields go into its first.
    target = body[0] if isinstance(body, list) else body
    target.update(extras)

    response = getattr(alice.client, operation.method)(operation.url(route_ids), body,
                                                       format="json")

    error = error_of(response, 422, "validation_error")
    detail = error["detail"]
    if isinstance(body, list):  # a list's errors by the index of the item
        detail = detail["0"]
    assert detail == {name: ["Unknown field."] for name in extras}, (str(operation), error)
    assert everything() == before
