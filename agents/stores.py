"""The harness's memory and skill stores over the agents tables, bound to one agent.

Both loads run once per run, in ``before_run``, and are bounded in time here, where the I/O is:
on PostgreSQL the query runs under a statement timeout (``hango().context_load_timeout``), and a
load that passes it raises, which the middleware turns into a run without that context.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager

from django.db import transaction

from agents import services
from agents.models import Agent, MemoryFile, Skill
from hango_project.config import hango
from hango_project.database import database
from hango_project.errors import ApplicationError
from hango_project.sql import fetch, uuid_param
from harness.stores import MemoryFile as HMemoryFile
from harness.stores import SkillSpec


def bounded_read(timeout: float | None = None) -> AbstractContextManager[None]:
    """A block whose statements give up after ``timeout`` seconds, in a transaction
    (:meth:`hango_project.database.Database.statement_timeout`: PostgreSQL only; the embedded
    SQLite database is a local file)."""
    return database().statement_timeout(hango().context_load_timeout if timeout is None
                                        else timeout)


# A check a store runs first in its write's transaction (a run's claim: raises when the run is
# no longer the writer's), so the write and the check commit together.
Guard = Callable[[], None]


@contextmanager
def guarded(guard: Guard | None) -> Iterator[None]:
    """A transaction that starts with ``guard`` (when there is one)."""
    with transaction.atomic():
        if guard is not None:
            guard()
        yield


class DbMemoryStore:
    """``preloaded``: the (path, content) rows of a run's preload, the first load's answer."""

    def __init__(self, agent: Agent, *, guard: Guard | None = None,
                 preloaded: list[tuple[str, str]] | None = None) -> None:
        self.agent = agent
        self.guard = guard
        self._preloaded = preloaded

    def load(self) -> list[HMemoryFile]:
        rows, self._preloaded = self._preloaded, None
        if rows is None:
            with bounded_read():
                rows = fetch(_MEMORY, [uuid_param(self.agent.pk)])
        return [HMemoryFile(path=p, content=c) for p, c in rows]

    def write(self, path: str, content: str) -> None:
        """Create or replace a file; a refused write (the agent's file cap) is a ValueError."""
        try:
            with guarded(self.guard):
                services.memory_file_put(agent=self.agent, path=path, content=content)
        except ApplicationError as exc:
            raise ValueError(exc.message) from None


# Every run of a memory agent reads its files before its first model call: one plain query.
_MEMORY = (f"SELECT path, content FROM {MemoryFile._meta.db_table} WHERE agent_id = %s "
           "ORDER BY path")


class DbSkillStore:
    """The skills an agent's parsed config names (``AgentConfig.skills``), from the agent's
    tenant only."""

    def __init__(self, agent: Agent, ids: Sequence[str]) -> None:
        self.agent = agent
        self.ids = tuple(ids)

    def load(self) -> list[SkillSpec]:
        if not self.ids:
            return []
        with bounded_read():
            rows = list(Skill.objects.filter(tenant_id=self.agent.tenant_id, id__in=self.ids)
                        .order_by("name"))
        return [SkillSpec(id=str(s.id), name=s.name, description=s.description,
                          instructions=s.instructions,
                          allowed_tools=None if s.allowed_tools is None
                          else tuple(s.allowed_tools)) for s in rows]
