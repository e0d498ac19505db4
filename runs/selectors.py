"""Reads of sessions, messages and runs, scoped to the caller."""

from __future__ import annotations

import json
import uuid
from typing import NamedTuple

from django.db import connection
from django.db.models import OuterRef, QuerySet, Subquery

from accounts.models import Member
from accounts.scoping import get_visible, visible_to
from hango_project.errors import NotFound
from runs.events import EVENT_MESSAGE
from runs.models import ACTIVE_RUN_STATUSES, Message, Run, RunEvent, Session, SessionFile
from runs.prepared import Prepared
from runs.stores import OctetLength


def _sessions() -> QuerySet[Session]:
    active = Run.objects.filter(session=OuterRef("pk"), status__in=ACTIVE_RUN_STATUSES)
    return Session.objects.annotate(active_run_id=Subquery(active.values("id")[:1]))


def session_list(*, member: Member) -> QuerySet[Session]:
    return visible_to(_sessions(), member)


def session_get(*, member: Member, session_id: uuid.UUID | str) -> Session:
    """The session with its agent and tenant, which most of its routes read."""
    return get_visible(_sessions().select_related("agent", "tenant"), member, session_id,
                       what="Session")


def message_list(*, session: Session) -> QuerySet[Message]:
    """The session's messages; the caller has already been allowed to see ``session``."""
    return Message.objects.filter(session=session)


def message_posted(message: Message) -> Message:
    """A message as posted, stored since if it has joined the history (else as it was)."""
    return Message.objects.filter(pk=message.pk).first() or message


def run_list(*, session: Session) -> QuerySet[Run]:
    return Run.objects.filter(session=session)


def run_get(*, member: Member, run_id: uuid.UUID | str) -> Run:
    return get_visible(Run.objects.select_related("session"), member, run_id, what="Run")


def run_events_after(*, run_id: uuid.UUID, after: int, limit: int) -> list[RunEvent]:
    """The run's events after ``after`` in seq order, each ``message.created`` with its
    message's ``content`` added (:func:`with_message_content`); the caller may see the run."""
    events = RunEvent.objects.filter(run_id=run_id, seq__gt=after).order_by("seq")[:limit]
    return with_message_content(list(events))


class StreamRead(NamedTuple):
    """What an event stream reads: the run's next events and the run as of exactly them."""

    events: list[RunEvent]
    status: str | None  # None: the run is gone
    turn: int  # every event of the turns up to this one is in ``events`` unless it is full


# A stream's read (runs.streaming) in one prepared statement: the run's status and turn, and its
# events after the cursor with their messages' content joined in, without the ORM (a thousand
# streams read a few times a second between them). The run's row comes without events too.
_STREAM_READ = Prepared.of("hango_stream_read", f"""
SELECT r.status, r.turn, e.seq, e.type, e.data, e.created_at, m.id, m.content
FROM {Run._meta.db_table} r
LEFT JOIN {RunEvent._meta.db_table} e ON e.run_id = r.id AND e.seq > %(after)s
LEFT JOIN {Message._meta.db_table} m ON e.type = %(message)s AND m.session_id = r.session_id
    AND m.seq = (e.data ->> 'seq')::integer
WHERE r.id = %(run)s
ORDER BY e.seq LIMIT %(limit)s
""", (("run", "uuid"), ("after", "integer"), ("limit", "integer"), ("message", "text")))


def stream_read(*, run_id: uuid.UUID, after: int, limit: int) -> StreamRead:
    """:func:`run_events_after` and the run's status and turn as of them, in one statement:
    the turn and the events come from one snapshot, so a stream that reads the run finished
    has its last events too."""
    if connection.vendor != "postgresql":
        # The run first, then its events, with no transaction (SQLite's would take the write
        # lock: the settings begin every transaction IMMEDIATE, and a read would queue behind
        # a turn's commit and hold up the next). Events only grow: those read second hold all
        # of the turns the run's row counted, and a run read as ended has its last events
        # committed with that status.
        run = Run.objects.filter(pk=run_id).values_list("status", "turn").first()
        events = run_events_after(run_id=run_id, after=after, limit=limit)
        return StreamRead(events, *(run or (None, 0)))
    with connection.cursor() as cursor:
        _STREAM_READ.run(cursor, {"run": run_id, "after": after, "limit": limit,
                                  "message": EVENT_MESSAGE})
        rows = cursor.fetchall()
    if not rows:
        return StreamRead([], None, 0)
    events = []
    for _, _, seq, type_, data, created_at, message_id, content in rows:
        if seq is None:  # the run's row alone: no event after the cursor
            break
        data = json.loads(data)
        if type_ == EVENT_MESSAGE:  # as with_message_content adds them
            data = {**data, "id": str(message_id) if message_id else data.get("id"),
                    "content": None if content is None else json.loads(content)}
        events.append(RunEvent(run_id=run_id, seq=seq, type=type_, data=data,
                               created_at=created_at))
    return StreamRead(events, rows[0][0], rows[0][1])


def with_message_content(events: list[RunEvent]) -> list[RunEvent]:
    """``events`` with the id and content of each ``message.created`` event's message in its
    data (unsaved), as the messages route answers them: read now, in one query for the whole
    page (the events are one run's), because a message is stored once, in ``messages`` (its
    event keeps its seq and role, which with the run's session name it), and read fresh, so an
    edit of the message shows in its event too."""
    seqs = [event.data["seq"] for event in events if event.type == EVENT_MESSAGE]
    if not seqs:
        return events
    assert len({event.run_id for event in events}) == 1, "one run's events"
    session = Run.objects.filter(pk=events[0].run_id).values("session_id")
    found = {seq: (str(id_), content) for seq, id_, content in Message.objects.filter(
        session_id=Subquery(session), seq__in=seqs).values_list("seq", "id", "content")}
    for event in events:
        if event.type == EVENT_MESSAGE:
            # An event stored before its id was left out still has it: the message's is the same.
            id_, content = found.get(event.data["seq"], (event.data.get("id"), None))
            event.data = {**event.data, "id": id_, "content": content}
    return events


def file_list(*, session: Session) -> QuerySet[SessionFile]:
    """The session's files with their ``size`` (UTF-8 bytes), without loading their content."""
    return (SessionFile.objects.filter(session=session).annotate(size=OctetLength("content"))
            .defer("content"))


def file_get(*, session: Session, path: str) -> SessionFile:
    found = SessionFile.objects.filter(session=session, path=path).first()
    if found is None:
        raise NotFound("File not found.")
    return found
