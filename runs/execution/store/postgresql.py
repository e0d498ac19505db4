"""PostgreSQL's store (:class:`runs.execution.store.RunStore`): a run's hot paths as hand-written
statements PREPAREd once per connection (:class:`runs.execution.prepared.Prepared`), each one
round trip — a post's rows (:mod:`runs.execution.store.pg_start`), the claim
(:mod:`runs.execution.store.pg_claim`), a turn's commit (:mod:`runs.execution.store.pg_turn`), a
call's record (:mod:`runs.execution.store.pg_ledger`), a run's preload
(:mod:`runs.execution.store.pg_preload`), a stream's read (:mod:`runs.execution.store.pg_stream`),
and here the poll, the read of a session's queue after a run and an MCP call's journal entry;
and the watch's renewals and reads on a connection of its own
(:class:`runs.execution.renewer.PostgreSQLStatements`)."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from django.db import connection
from django.utils import timezone

from hango_project import metrics
from harness.errors import Superseded
from harness.messages import ModelUsage
from runs.execution.fence import Claim
from runs.execution.preload import Preloaded
from runs.execution.prepared import Prepared
from runs.execution.renewer import PostgreSQLStatements, Statements
from runs.execution.store import StreamRead
from runs.execution.store.orm import OrmStore
from runs.execution.store.pg_claim import claim_unheld
from runs.execution.store.pg_ledger import record_one_statement
from runs.execution.store.pg_preload import preload_one_statement
from runs.execution.store.pg_start import start_one_statement
from runs.execution.store.pg_stream import read_stream_one_statement
from runs.execution.store.pg_turn import commit_one_statement
from runs.execution.turn_write import Committed, TurnWrite
from runs.models import Message, PendingMessage, Run, RunStatus, Session, ToolCallStart

if TYPE_CHECKING:
    from runs.execution.store import Audit

_POLL = Prepared.of(
    "hango_poll", f"SELECT cancel_requested, epoch = %(epoch)s AND status = %(running)s "
    f"FROM {Run._meta.db_table} WHERE id = %(run)s",
    (("run", "uuid"), ("epoch", "bigint"), ("running", "text")))


_WAITING_AFTER = Prepared.of("hango_waiting_after", f"""
SELECT q.session_id FROM {PendingMessage._meta.db_table} q
WHERE q.session_id = (SELECT r.session_id FROM {Run._meta.db_table} r WHERE r.id = %(run)s)
LIMIT 1
""", (("run", "uuid"),))


# One statement, one round trip: the run's row locked while the claim holds it (as
# ``Claim.hold`` does) and the call's row inserted beside it; whether the claim held the run is
# the answer. A guarded ORM write took six round trips, a sixth of an MCP run's worker CPU.
_JOURNAL = Prepared.of(
    "hango_journal_call",
    f"WITH held AS (SELECT id FROM {Run._meta.db_table} WHERE id = %(run)s "
    "AND epoch = %(epoch)s AND status = %(running)s FOR NO KEY UPDATE), "
    f"written AS (INSERT INTO {ToolCallStart._meta.db_table} "
    "(run_id, key, tool_use_id, tool, epoch, created_at) "
    "SELECT id, %(key)s, %(call)s, %(tool)s, %(epoch)s, now() FROM held "
    "ON CONFLICT (run_id, key) DO NOTHING RETURNING 1) "
    "SELECT EXISTS (SELECT 1 FROM held)",
    (("run", "uuid"), ("epoch", "bigint"), ("running", "text"), ("key", "text"),
     ("call", "text"), ("tool", "text")))


class PostgreSQLStore:
    def __init__(self) -> None:
        self._general = OrmStore()

    def start_run(self, session: Session, blocks: list[dict[str, Any]],
                  audit: Audit) -> tuple[Message, Run, bool | None]:
        return start_one_statement(session, blocks, audit)

    def claim(self, run_id: uuid.UUID | str, owner: str, lease: timedelta) -> Run | None:
        now = timezone.now()
        if (run := claim_unheld(run_id, owner, now + lease, now)) is not None:
            if run.started_at == now:  # set by this claim: the run's first
                metrics.run_started(run.created_at, now)
            return run
        # Not the common case the statement takes (a live lease of another owner, a cancel
        # asked for, an error to carry, a finished or unknown run): the general path decides,
        # the same transaction as on SQLite, with the row lock PostgreSQL takes for it.
        return self._general.claim(run_id, owner, lease)

    def commit_turn(self, write: TurnWrite) -> Committed | None:
        return commit_one_statement(write)

    def preload(self, tenant_id: uuid.UUID, agent_id: uuid.UUID, session_id: uuid.UUID, *,
                counts_key: str | None = None, session_state: bool = False) -> Preloaded:
        return preload_one_statement(tenant_id, agent_id, session_id, counts_key=counts_key,
                                     session_state=session_state)

    def waiting_after(self, run_id: uuid.UUID | str) -> uuid.UUID | None:
        # Prepared like the run's other statements (the last thing a run's task sends).
        with connection.cursor() as cursor:
            _WAITING_AFTER.run(cursor, {"run": uuid.UUID(str(run_id))})
            row = cursor.fetchone()
        return None if row is None else uuid.UUID(str(row[0]))

    def journal_call(self, claim: Claim, key: str, *, tool_use_id: str, tool: str) -> None:
        with connection.cursor() as cursor:
            _JOURNAL.run(cursor, {"run": claim.run_id, "epoch": claim.epoch,
                                  "running": RunStatus.RUNNING, "key": key[:300],
                                  "call": tool_use_id[:200], "tool": tool[:200]})
            held = cursor.fetchone()
        if not (held and held[0]):
            raise Superseded(f"run {claim.run_id} is no longer held under epoch {claim.epoch}")

    def poll(self, claim: Claim) -> tuple[bool, bool]:
        # One prepared statement: a run polls before its tools after every model call.
        with connection.cursor() as cursor:
            _POLL.run(cursor, {"run": claim.run_id, "epoch": claim.epoch,
                               "running": RunStatus.RUNNING})
            found = cursor.fetchone()
        return (False, False) if found is None else (bool(found[0]), bool(found[1]))

    def read_stream(self, run_id: uuid.UUID, *, after: int, limit: int) -> StreamRead:
        return read_stream_one_statement(run_id, after, limit)

    def watch_statements(self) -> Statements:
        # The thread's own connection takes the default connection's parameters.
        return PostgreSQLStatements(connection.get_connection_params())

    def record_call(self, run: Run, call: ModelUsage, key: str, printed: bytes | None,
                    holds: list[int]) -> None:
        record_one_statement(run, call, key, printed, holds)
