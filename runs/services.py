"""Writes for sessions (runs arrive with the run service)."""

from __future__ import annotations

from django.db import transaction

from accounts.models import Member
from agents.models import Agent
from runs.models import Session


@transaction.atomic
def session_create(*, member: Member, agent: Agent, title: str = "") -> Session:
    """A new session of ``agent``; the caller must already be allowed to see the agent."""
    if agent.tenant_id != member.tenant_id:  # the scoping rule makes this unreachable from the API
        raise ValueError("agent and member belong to different tenants")
    return Session.objects.create(tenant_id=member.tenant_id, agent=agent, member=member, title=title)
