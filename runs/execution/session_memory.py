"""The memory store of an eval's session: its case's memory files, read and written in place of
the agent's, so an eval never changes the agent it evaluates.

An eval session carries its own memory (``Session.memory``, ``{"/path": content}``) when its
case set one up (``setup.memory``); its runs prompt with those files and nothing of the agent's.
A session without one reads the agent's memory as any run does, until one of its runs writes
(``update_memory``): that write copies the agent's files as they are then into the session and
adds the new one there. Either way no write of an eval reaches the agent's memory files.

The store is chosen once, where a run's stack is built (:func:`runs.execution.assembly.build_loop`),
for runs and the context inspector alike, so what the inspector shows is what the eval sends.
"""

from __future__ import annotations

from agents.stores import DbMemoryStore, Guard, guarded
from harness.stores import MemoryFile
from runs.models import Session


class SessionMemoryStore:
    """An eval session's memory, over its row read with the run (``session``); the agent's
    (``agent_memory``) while the session has none of its own. ``max_files``: the cap an agent's
    memory has (``HANGO_MEMORY_MAX_FILES``), held for the session's copy too."""

    def __init__(self, session: Session, *, agent_memory: DbMemoryStore, max_files: int,
                 guard: Guard | None = None) -> None:
        if max_files < 1:
            raise ValueError("max_files must be a positive integer")
        self.session_id = session.pk
        self.agent_memory = agent_memory
        self.max_files = max_files
        self.guard = guard
        self._files: dict[str, str] | None = session.memory

    def load(self) -> list[MemoryFile]:
        if self._files is None:
            return self.agent_memory.load()
        return [MemoryFile(path=path, content=self._files[path]) for path in sorted(self._files)]

    def write(self, path: str, content: str) -> None:
        """Create or replace a file of the session's memory (its first write copies the
        agent's); a refused write (the file cap) is a ValueError."""
        with guarded(self.guard):
            locked = (Session.objects.select_for_update().filter(pk=self.session_id)
                      .values_list("memory", flat=True).first())
            files = dict(locked) if locked is not None else {
                f.path: f.content for f in self.agent_memory.load()}
            if path not in files and len(files) >= self.max_files:
                raise ValueError(f"An eval's memory has at most {self.max_files} files, as an "
                                 "agent's; replace one instead.")
            files[path] = content
            Session.objects.filter(pk=self.session_id).update(memory=files)
        self._files = files
