"""The harness's memory and skill stores over the agents tables, bound to one agent."""

from __future__ import annotations

from django.db import transaction

from agents.models import Agent, MemoryFile, Skill
from harness.stores import MemoryFile as HMemoryFile
from harness.stores import SkillSpec


class DbMemoryStore:
    def __init__(self, agent: Agent) -> None:
        self.agent = agent

    def load(self) -> list[HMemoryFile]:
        rows = MemoryFile.objects.filter(agent=self.agent).order_by("path")
        return [HMemoryFile(path=p, content=c) for p, c in rows.values_list("path", "content")]

    def write(self, path: str, content: str) -> None:
        with transaction.atomic():
            MemoryFile.objects.update_or_create(
                agent=self.agent, path=path, defaults={"content": content})


class DbSkillStore:
    """The skills named in the agent's ``config.skills``, from the agent's tenant only."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent

    def load(self) -> list[SkillSpec]:
        ids = (self.agent.config or {}).get("skills") or []
        if not ids:
            return []
        rows = Skill.objects.filter(tenant_id=self.agent.tenant_id, id__in=ids).order_by("name")
        return [SkillSpec(id=str(s.id), name=s.name, description=s.description,
                          instructions=s.instructions,
                          allowed_tools=None if s.allowed_tools is None
                          else tuple(s.allowed_tools)) for s in rows]
