"""Reads of the context inspector's overrides; the caller has already been allowed to see the
agent or session (``agents.selectors.agent_get``, ``runs.selectors.session_get``)."""

from __future__ import annotations

from agents.models import Agent
from context.models import ContextOverride
from context.stores import overrides_of
from harness.context import Override
from runs.models import Session


def overrides_list(*, target: Agent | Session) -> list[Override]:
    field = "agent" if isinstance(target, Agent) else "session"
    rows = ContextOverride.objects.filter(**{field: target}).order_by("created_at", "part")
    return overrides_of(list(rows))
