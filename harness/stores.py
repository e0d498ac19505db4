"""What the context middlewares read and write outside the run state, as protocols.

The harness defines the shapes; the Django side implements them over its tables (agents/stores.py,
runs/execution/stores.py) and hands them in through :class:`harness.stack.RunDeps`. Tests use
in-memory implementations. Every store is bound to one run's agent or session when it is built.

A store that writes for a run may refuse once the run is no longer the writer's (cancelled, or
claimed by another worker) by raising :class:`harness.errors.Superseded`; nothing in the harness
catches it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from harness.context import Override


@dataclass(frozen=True, kw_only=True)
class MemoryFile:
    path: str  # e.g. "/memories/AGENTS.md"
    content: str


class MemoryStore(Protocol):
    """The agent's memory files."""

    def load(self) -> list[MemoryFile]: ...

    def write(self, path: str, content: str) -> None: ...


@dataclass(frozen=True, kw_only=True)
class SkillSpec:
    id: str
    name: str  # ≤ 64 characters
    description: str  # ≤ 1024 characters
    instructions: str
    allowed_tools: tuple[str, ...] | None = None  # tools a loaded skill may add


class SkillStore(Protocol):
    """The skills attached to the agent."""

    def load(self) -> list[SkillSpec]: ...


@dataclass(frozen=True, kw_only=True)
class FileInfo:
    path: str
    size: int


class FileStore(Protocol):
    """The session's virtual filesystem (absolute paths, text content)."""

    def list(self) -> list[FileInfo]: ...

    def read(self, path: str) -> str | None: ...

    def write(self, path: str, content: str) -> None: ...


@dataclass(frozen=True, kw_only=True)
class Summary:
    text: str
    through_seq: int  # the last stored message seq the summary covers


class SummaryStore(Protocol):
    """The session's compaction summary, reused and extended by later runs."""

    def load(self) -> Summary | None: ...

    def save(self, summary: Summary) -> None: ...


class OverrideStore(Protocol):
    """The context overrides a run applies: its agent's (system and tool parts) and its
    session's (message and summary parts)."""

    def load(self) -> list[Override]: ...
