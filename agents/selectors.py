"""Reads of agents, scoped to the caller."""

from __future__ import annotations

import uuid

from django.db.models import QuerySet

from accounts.models import Member
from accounts.scoping import get_visible, visible_to
from agents.models import Agent


def agent_list(*, member: Member) -> QuerySet[Agent]:
    return visible_to(Agent.objects.all(), member)


def agent_get(*, member: Member, agent_id: uuid.UUID | str) -> Agent:
    return get_visible(Agent.objects.all(), member, agent_id, what="Agent")
