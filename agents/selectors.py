"""Reads of agents, their memory files and the tenant's skills, scoped to the caller."""

from __future__ import annotations

import uuid

from django.db.models import QuerySet
from rest_framework import status

from accounts.models import Member
from accounts.scoping import get_visible, visible_to
from agents.models import Agent, AgentVersion, MemoryFile, Skill
from hango_project.errors import ApplicationError, NotFound
from harness.middleware.memory import path_problem


class SkillNotEditable(ApplicationError):
    """Every member sees the tenant's skills, so refusing a change is a 403, not a 404."""

    status_code = status.HTTP_403_FORBIDDEN
    code = "permission_denied"
    message = "Only the skill's owner or an owner or admin of the tenant may change it."


def agent_list(*, member: Member) -> QuerySet[Agent]:
    return visible_to(Agent.objects.all(), member)


def agent_get(*, member: Member, agent_id: uuid.UUID | str) -> Agent:
    return get_visible(Agent.objects.all(), member, agent_id, what="Agent")


def memory_file_list(*, agent: Agent) -> QuerySet[MemoryFile]:
    """``agent`` comes from :func:`agent_get`: whoever sees the agent sees its memory."""
    return MemoryFile.objects.filter(agent=agent)


def memory_file_get(*, agent: Agent, path: str) -> MemoryFile:
    # An invalid path names no file (and a NUL in it must never reach the database).
    memory_file = None if path_problem(path) else (
        MemoryFile.objects.filter(agent=agent, path=path).first())
    if memory_file is None:
        raise NotFound("Memory file not found.")
    return memory_file


def skill_list(*, member: Member) -> QuerySet[Skill]:
    return visible_to(Skill.objects.all(), member)


def may_change_skill(member: Member, skill: Skill) -> bool:
    return skill.owner_id == member.pk or member.sees_whole_tenant


def skill_get(*, member: Member, skill_id: uuid.UUID | str, to_change: bool = False) -> Skill:
    """A skill of the caller's tenant (404 otherwise); with ``to_change``, one the caller may
    also change or delete (403 otherwise)."""
    skill = get_visible(Skill.objects.all(), member, skill_id, what="Skill")
    if to_change and not may_change_skill(member, skill):
        raise SkillNotEditable()
    return skill


def version_list(*, agent: Agent) -> QuerySet[AgentVersion]:
    """``agent`` comes from :func:`agent_get`: whoever sees the agent sees its versions."""
    return AgentVersion.objects.filter(agent=agent)


def version_get(*, agent: Agent, number: int | str) -> AgentVersion:
    raw = str(number)
    version = (AgentVersion.objects.filter(agent=agent, number=int(raw)).first()
               if raw.isascii() and raw.isdigit() and len(raw) < 10 else None)
    if version is None:
        raise NotFound("Agent version not found.", detail={"version": raw})
    return version
