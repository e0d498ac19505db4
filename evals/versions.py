"""Which configuration of an agent an eval run sends its cases to: the one place an eval run's
``version`` is resolved (agents.versions keeps the versions)."""

from __future__ import annotations

from agents.models import Agent, AgentVersion
from hango_project.errors import Unprocessable


def resolved_version(agent: Agent, number: int | None) -> int | None:
    """The version number an eval run pins its cases' sessions to: ``number`` when the agent has
    that version (else a 422 naming ``version``), or the agent's latest when the eval run
    starts, so a change made while it runs does not reach its later turns. None only for an
    agent with no versions (made without the services)."""
    if number is None:
        return agent.version or None
    if not AgentVersion.objects.filter(agent=agent, number=number).exists():
        reason = f"The agent has no version {number}; its latest is {agent.version}."
        raise Unprocessable(reason, detail={"version": [reason]})
    return number
