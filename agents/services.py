"""Writes for agents."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from accounts.models import Member
from agents.models import Agent

# The fields a caller may set; everything else (tenant, owner, id, timestamps) is the server's.
WRITABLE_FIELDS = ("name", "description", "system_prompt", "model", "allowed_tools", "config")


@transaction.atomic
def agent_create(*, member: Member, data: dict[str, Any]) -> Agent:
    fields = {k: v for k, v in data.items() if k in WRITABLE_FIELDS}
    return Agent.objects.create(tenant_id=member.tenant_id, owner=member, **fields)


@transaction.atomic
def agent_update(*, agent: Agent, data: dict[str, Any]) -> Agent:
    changed = [k for k in WRITABLE_FIELDS if k in data]
    for name in changed:
        setattr(agent, name, data[name])
    if changed:
        agent.save(update_fields=[*changed, "updated_at"])
    return agent


@transaction.atomic
def agent_delete(*, agent: Agent) -> None:
    agent.delete()
