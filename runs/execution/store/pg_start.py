"""A post's rows in one statement (PostgreSQL): the queued run, the user message at the
session's next seq, the run's first status event, the session's ``updated_at`` and the post's
audit row — what :func:`runs.intake.services.message_post` writes for a message that starts
its run now; the statement also counts the tenant's busy runs, for the priority its task is sent
at (:mod:`runs.execution.fairness`), and reads the agent version the run records (the session's
pin, else the agent's latest: :func:`agents.versions.for_new_run`, whose ORM query was a tenth
of a post's web CPU).

The ORM wrote them as five statements, each compiled anew on every post: the largest part of a
post's web CPU once the rest was cut (bench/README.md, "A post over HTTP"). The statement is
built once per process from the models' fields, so a new column is written without a change
here; the values are prepared as Django's insert prepares them (:mod:`hango_project.rows`).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from django.db import connection, models, transaction
from django.utils import timezone

from accounts.models import AuditEntry
from agents.models import Agent
from hango_project.rows import insert_fields, insert_sql, insert_values
from runs.execution import fairness
from runs.execution.events import status_event
from runs.live import relay
from runs.models import Message, Run, RunEvent, Session

if TYPE_CHECKING:
    from runs.execution.store import Audit


def start_one_statement(session: Session, blocks: list[dict[str, Any]],
                        audit: Audit) -> tuple[Message, Run, bool]:
    run = Run(session=session, agent_id=session.agent_id, event_seq=1)  # its version: below
    kind, data = status_event(run)
    event = RunEvent(run=run, seq=1, type=kind, data=data)
    message = Message(session=session, role="user", content=blocks, run=run)
    busy = _write_start(run, event, message, audit(run, message), timezone.now())
    run_id = run.pk
    transaction.on_commit(lambda: relay.events_added(run_id, turn=0, seq=1))
    return message, run, fairness.past_share(busy + 1)


@functools.cache
def _statement() -> str:
    def row(model: type[models.Model], computed: dict[str, str] | None = None) -> str:
        return ", ".join((computed or {}).get(str(f.column), "%s") for f in insert_fields(model))

    sessions = connection.ops.quote_name(Session._meta.db_table)
    agents = connection.ops.quote_name(Agent._meta.db_table)
    # As agents.versions.for_new_run decides (a version 0: none), read under the session's lock.
    version = (f"(SELECT coalesce(s.agent_version, nullif(a.version, 0)) FROM {sessions} s "
               f"JOIN {agents} a ON a.id = s.agent_id WHERE s.id = %s)")

    # Every part runs, referenced or not, on one snapshot; the foreign keys are checked at its
    # end (Django's are deferred to the commit), so the parts' order does not matter.
    run = insert_sql(Run, f"VALUES ({row(Run, {'agent_version': version})})", "agent_version")
    event = insert_sql(RunEvent, f"VALUES ({row(RunEvent)})", "1")
    audit = insert_sql(AuditEntry, f"VALUES ({row(AuditEntry)})", "1")
    seq = "(SELECT coalesce(max(seq), 0) + 1 FROM messages WHERE session_id = %s)"
    message = insert_sql(Message, f"VALUES ({row(Message, {'seq': seq})})", "seq")
    return (f"WITH run AS ({run}), event AS ({event}), audit AS ({audit}), "
            f"touched AS (UPDATE {sessions} SET updated_at = %s WHERE id = %s RETURNING 1) "
            f"{message}, {fairness.BUSY_OF_TENANT}, (SELECT agent_version FROM run)")


def _write_start(run: Run, event: RunEvent, message: Message, audit: AuditEntry,
                 now: Any) -> int:
    """Insert ``run`` (its ``agent_version`` set here), ``event``, ``message`` (its ``seq`` set
    here: the session's next) and ``audit``, and touch the session, in the caller's transaction,
    which holds the session's lock: the tenant's busy runs before this one (up to a bound)."""
    session_id = run.session_id
    params = [*insert_values(run, {"agent_version": session_id}), *insert_values(event),
              *insert_values(audit), now, session_id,
              *insert_values(message, {"seq": session_id}),
              *fairness.busy_of_tenant_params(run.session.tenant_id)]
    with connection.cursor() as cursor:
        cursor.execute(_statement(), params)
        message.seq, busy, run.agent_version = cursor.fetchone()
    for obj in (run, event, message, audit):
        obj._state.adding, obj._state.db = False, connection.alias
    return int(busy)
