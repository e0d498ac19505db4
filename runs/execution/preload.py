"""What a run reads before its first model call, in one round trip: the session's history, the
overrides that apply to it, the agent's memory files and the session's file listing.

Read one by one, these were five round trips (the memory read also set its statement timeout
and committed); in a worker each costs 0.1–0.3 ms of a run's fixed cost. Here they are one
query under the same timeout as the memory read (``hango().context_load_timeout``), on
PostgreSQL (:mod:`runs.execution.store.pg_preload`); SQLite's store preloads nothing. A preload
that fails — the timeout, a lock held on one of the tables — preloads nothing: each store reads
as it always did, and one that still fails leaves the run without that context
(:func:`harness.middleware._stores.load_or_none`). The memory and override stores hand out what
was preloaded once and read afresh after that; the file store keeps the listing until its first
write, as it keeps one it read itself.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass


@dataclass(frozen=True)
class Preloaded:
    """Each part None where it was not preloaded (its store reads it)."""

    # (seq, role, content as JSON text, its stored count under the run's counts key or None)
    history: list[tuple[int, str, str, int | None]] | None
    overrides: list[tuple[str, str, str | None]] | None  # (part, action, replacement)
    memory: list[tuple[str, str]] | None  # (path, content), by path
    files: list[tuple[str, int]] | None  # (path, size in UTF-8 bytes), by path
    session: SessionState | None = None  # asked for (``session_state``) and read


@dataclass(frozen=True)
class SessionState:
    """Where the session's next call starts from, read with its history (the inspector's)."""

    # The active run: id, status, turn, state JSON, the agent version it executes.
    run: tuple[uuid.UUID, str, int, str, int | None] | None
    queued: list[tuple[uuid.UUID, str]]  # the messages queued behind it: id, content JSON, in order


NOTHING_PRELOADED = Preloaded(history=None, overrides=None, memory=None, files=None)
