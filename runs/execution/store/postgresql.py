"""PostgreSQL's store (:class:`runs.execution.store.RunStore`): a run's hot paths as hand-written
statements PREPAREd once per connection (:class:`runs.execution.prepared.Prepared`), each one
round trip — the claim (:mod:`runs.execution.store.pg_claim`), a turn's commit
(:mod:`runs.execution.store.pg_turn`), a call's record (:mod:`runs.execution.store.pg_ledger`),
the poll; and the watch's renewals and reads on a connection of its own
(:class:`runs.execution.renewer.PostgreSQLStatements`)."""

from __future__ import annotations

import uuid
from datetime import timedelta

from django.db import connection
from django.utils import timezone

from hango_project import metrics
from harness.messages import ModelUsage
from runs.execution.fence import Claim
from runs.execution.preload import Preloaded
from runs.execution.prepared import Prepared
from runs.execution.renewer import PostgreSQLStatements, Statements
from runs.execution.store.orm import OrmStore
from runs.execution.store.pg_claim import claim_unheld
from runs.execution.store.pg_ledger import record_one_statement
from runs.execution.store.pg_preload import preload_one_statement
from runs.execution.store.pg_turn import commit_one_statement
from runs.execution.turn_write import Committed, TurnWrite
from runs.models import Run, RunStatus

_POLL = Prepared.of(
    "hango_poll", f"SELECT cancel_requested, epoch = %(epoch)s AND status = %(running)s "
    f"FROM {Run._meta.db_table} WHERE id = %(run)s",
    (("run", "uuid"), ("epoch", "bigint"), ("running", "text")))


class PostgreSQLStore:
    def __init__(self) -> None:
        self._general = OrmStore()

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

    def poll(self, claim: Claim) -> tuple[bool, bool]:
        # One prepared statement: a run polls before its tools after every model call.
        with connection.cursor() as cursor:
            _POLL.run(cursor, {"run": claim.run_id, "epoch": claim.epoch,
                               "running": RunStatus.RUNNING})
            found = cursor.fetchone()
        return (False, False) if found is None else (bool(found[0]), bool(found[1]))

    def watch_statements(self) -> Statements:
        # The thread's own connection takes the default connection's parameters.
        return PostgreSQLStatements(connection.get_connection_params())

    def record_call(self, run: Run, call: ModelUsage, key: str, printed: bytes | None,
                    holds: list[int]) -> None:
        record_one_statement(run, call, key, printed, holds)
