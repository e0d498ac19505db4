"""What the runs app needs from its database, one implementation per engine, chosen once.

A run's hot paths each have two bodies: hand-written PostgreSQL (PREPAREd statements,
data-modifying CTEs, one round trip) and the ORM's, for SQLite, the quickstart's engine. They
live here, side by side only in the protocol (:class:`RunStore`): the PostgreSQL store in
:mod:`runs.execution.store.postgresql`, the ORM's in :mod:`runs.execution.store.orm`.
:func:`store` picks one per process from the engine of the default connection
(:func:`hango_project.database.database`); callers ask it and hold no ``if`` of their own.

Both stores answer the same contract (tests/runs/test_store_contract.py runs the same
assertions against each): a path that drifts from its twin fails there.
"""

from __future__ import annotations

import functools
import uuid
from datetime import timedelta
from typing import TYPE_CHECKING, NamedTuple, Protocol

from hango_project.database import database

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from accounts.models import AuditEntry
    from harness.messages import ModelUsage
    from runs.execution.fence import Claim
    from runs.execution.preload import Preloaded
    from runs.execution.renewer import Statements
    from runs.execution.turn_write import Committed, TurnWrite
    from runs.models import Message, Run, RunEvent, Session

    Audit = Callable[[Run, Message], AuditEntry]  # a post's audit row, for its run and message


class StreamRead(NamedTuple):
    """What an event stream reads: the run's next events and the run as of exactly them."""

    events: list[RunEvent]
    status: str | None  # None: the run is gone
    turn: int  # every event of the turns up to this one is in ``events`` unless it is full


class RunStore(Protocol):
    """What a run asks the database, from its post to its stream's reads."""

    def start_run(self, session: Session, blocks: list[dict[str, Any]],
                  audit: Audit) -> tuple[Message, Run, bool | None]:
        """The message joins the history and its run is queued, in the caller's transaction,
        which holds the session's lock (nothing active, nothing waiting), with the audit row
        ``audit`` makes for them (:func:`accounts.audit.audit_entry`); its followers are told
        once it commits. The caller sends the run's task: the third value says whether the
        tenant is past its fair share with this run (None: not counted here)."""
        ...

    def claim(self, run_id: uuid.UUID | str, owner: str, lease: timedelta) -> Run | None:
        """Take the run's lease for ``owner``, for ``lease`` from now, under a new epoch (a
        queued run starts running; a lease expired under another worker is taken over; a cancel
        asked for while nobody ran it is honoured): the run with its agent, session and tenant,
        or None when there is nothing to do (finished, unknown, held by a live lease of another
        owner, cancelled now)."""
        ...

    def commit_turn(self, write: TurnWrite) -> Committed | None:
        """Commit one turn (its messages, events, state and counter; the last turn also ends
        the run) while the writer's epoch holds the running run at the expected turn; None when
        it was fenced out, and then nothing was written."""
        ...

    def record_call(self, run: Run, call: ModelUsage, key: str, printed: bytes | None,
                    holds: list[int]) -> None:
        """Record one model call as it ends, in a transaction of its own: its usage row (under
        ``key``, with the request's ``printed`` fingerprint), the run's token counters, and the
        release of ``holds``, the quota holds it settles."""
        ...

    def preload(self, tenant_id: uuid.UUID, agent_id: uuid.UUID, session_id: uuid.UUID, *,
                counts_key: str | None = None, session_state: bool = False) -> Preloaded:
        """What a run reads before its first model call, in one round trip where the engine
        has one (:mod:`runs.execution.preload`); :data:`~runs.execution.preload.NOTHING_PRELOADED`
        where it reads none (each store then reads its own)."""
        ...

    def waiting_after(self, run_id: uuid.UUID | str) -> uuid.UUID | None:
        """The session of the run when messages wait in its queue (one indexed read), else
        None: what the worker asks once a run's end has committed, before it starts the next
        one (:func:`runs.execution.queue.start_next`)."""
        ...

    def journal_call(self, claim: Claim, key: str, *, tool_use_id: str, tool: str) -> None:
        """Write an MCP call's journal entry (once per ``key``) before the call is sent, under
        the claim's guard; raise :class:`~harness.errors.Superseded` when the claim no longer
        holds the run, and then nothing was written."""
        ...

    def poll(self, claim: Claim) -> tuple[bool, bool]:
        """Whether the run's cancel was asked for, and whether ``claim`` still holds it."""
        ...

    def read_stream(self, run_id: uuid.UUID, *, after: int, limit: int) -> StreamRead:
        """A run's event stream's read: its events after ``after`` in seq order (at most
        ``limit``), each ``message.created`` with its message's id and content
        (:func:`runs.execution.events.with_message_content`), and the run's status and turn as
        of exactly those events (a stream that reads the run ended has its last events too);
        ``([], None, 0)`` for a run that is gone."""
        ...

    def watch_statements(self) -> Statements:
        """What the run watch (:mod:`runs.execution.leases`) asks the database, on its
        thread's own connection: renew the held runs' leases, read their news."""
        ...


@functools.cache
def store() -> RunStore:
    """This process's store, picked once from the default connection's engine."""
    if database().vendor == "postgresql":
        from runs.execution.store.postgresql import PostgreSQLStore
        return PostgreSQLStore()
    from runs.execution.store.orm import OrmStore
    return OrmStore()
