"""A post's rows in one statement on PostgreSQL: the queued run, the user message at the
session's next seq, the run's first status event and the session's ``updated_at`` — what
:func:`runs.services.message_post` writes for a message that starts its run now.

The ORM wrote them as five statements, each compiled anew on every post: the largest part of a
post's web CPU once the rest was cut (bench/README.md, "A post over HTTP"). The statement is
built once per process from the models' fields, so a new column is written without a change
here; the values are prepared as Django's insert prepares them (:mod:`hango_project.rows`).
SQLite, single-writer and in process, keeps the ORM's statements.
"""

from __future__ import annotations

import functools
from typing import Any

from django.db import connection, models, transaction
from django.db.models import Max
from django.utils import timezone

from agents import versions
from hango_project.database import database
from hango_project.rows import insert_fields, insert_sql, insert_values
from runs import live
from runs.events import append_events, status_event
from runs.models import Message, Run, RunEvent, Session


def start_now(session: Session, blocks: list[dict[str, Any]]) -> tuple[Message, Run]:
    """The message joins the history and its run is queued, in the caller's transaction, which
    holds the session's lock (nothing active, nothing waiting); its followers are told once it
    commits. The caller sends the run's task."""
    now = timezone.now()
    if not database().one_statement:
        return _start_with_orm(session, blocks, now)
    run = Run(session=session, agent_id=session.agent_id, event_seq=1,
              agent_version=versions.for_new_run(session))
    kind, data = status_event(run)
    event = RunEvent(run=run, seq=1, type=kind, data=data)
    message = Message(session=session, role="user", content=blocks, run=run)
    _write_start(run, event, message, now)
    run_id = run.pk
    transaction.on_commit(lambda: live.events_added(run_id, turn=0, seq=1))
    return message, run


def _start_with_orm(session: Session, blocks: list[dict[str, Any]],
                    now: Any) -> tuple[Message, Run]:
    # Stored with its first event's seq already, so no UPDATE of the run follows the event.
    run = Run.objects.create(session=session, agent_id=session.agent_id, event_seq=1,
                             agent_version=versions.for_new_run(session))
    run.event_seq = 0
    last = session.messages.aggregate(m=Max("seq"))["m"] or 0
    message = Message.objects.create(session=session, seq=last + 1, role="user",
                                     content=blocks, run=run)
    append_events(run, [status_event(run)])
    Session.objects.filter(pk=session.pk).update(updated_at=now)
    return message, run


@functools.cache
def _statement() -> str:
    def row(model: type[models.Model], seq_column: str | None = None) -> str:
        return ", ".join(
            "(SELECT coalesce(max(seq), 0) + 1 FROM messages WHERE session_id = %s)"
            if f.column == seq_column else "%s" for f in insert_fields(model))

    # Every part runs, referenced or not, on one snapshot; the foreign keys are checked at its
    # end (Django's are deferred to the commit), so the parts' order does not matter.
    run = insert_sql(Run, f"VALUES ({row(Run)})", "1")
    event = insert_sql(RunEvent, f"VALUES ({row(RunEvent)})", "1")
    message = insert_sql(Message, f"VALUES ({row(Message, 'seq')})", "seq")
    sessions = connection.ops.quote_name(Session._meta.db_table)
    return (f"WITH run AS ({run}), event AS ({event}), "
            f"touched AS (UPDATE {sessions} SET updated_at = %s WHERE id = %s RETURNING 1) "
            f"{message}")


def _write_start(run: Run, event: RunEvent, message: Message, now: Any) -> None:
    """Insert ``run``, ``event`` and ``message`` (its ``seq`` set here: the session's next) and
    touch the session, in the caller's transaction, which holds the session's lock."""
    session_id = run.session_id
    params = [*insert_values(run), *insert_values(event), now, session_id,
              *insert_values(message, {"seq": session_id})]
    with connection.cursor() as cursor:
        cursor.execute(_statement(), params)
        message.seq = cursor.fetchone()[0]
    for obj in (run, event, message):
        obj._state.adding, obj._state.db = False, connection.alias
