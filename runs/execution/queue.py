"""A session's queue: the messages posted while it had an active run, each waiting, with its run
``pending``, until the runs before it have ended (``multitask`` ``enqueue`` and ``interrupt`` of
``POST /v1/sessions/{id}/messages``). One home for the queue's lifecycle:

1. **Wait.** :func:`enqueue` keeps the message out of the history (a :class:`PendingMessage`; it
   gets no seq yet, or the active run's next turn would land after it) and creates its run as
   ``pending``, which the one-active-run index does not count.
2. **Start.** When the session has no active run, :func:`start_next` moves the first waiting
   message into the history with the session's next seq and queues its run (the caller enqueues
   it after commit). A pending run whose cancel was asked for (:func:`cancel_waiting`: an
   interrupt behind it, or ``POST /v1/runs/{id}/cancel``) joins the history cancelled, and the
   next one is tried: no message is ever dropped, and seqs keep the order of the posts.
3. **Who starts it.** Whoever ends the active run: a web request in its own transaction (a
   cancel, an interrupt, a post finding the queue stalled); the worker right after a run's end
   commits (:meth:`runs.execution.store.RunStore.waiting_after`, then :func:`start_next`: one
   read when nothing waits, so the last turn stays one statement); the reconciler for a queue
   whose start was lost to a crash between the two (:func:`start_stalled`).

Why it is race-free: every change that makes a run active (a post, a resume, a start here) holds
the session's lock (:func:`lock_session`), and a post that finds an active run and queues behind
it locks that run's row too (:func:`active_run`). So either the run's end commits first, and the
post sees no active run and starts its message itself, or the end waits for the post's commit,
and the worker's read after its end sees the waiting message. The partial unique index (one
active run per session) stays the last word.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from django.db.models import Exists, Max, OuterRef
from django.utils import timezone

from agents import versions
from hango_project.database import database
from hango_project.sql import fetch, uuid_param
from runs.execution.endings import count_cancelled, finish_run
from runs.execution.events import append_events, status_event
from runs.models import (
    ACTIVE_RUN_STATUSES,
    Message,
    PendingMessage,
    Role,
    Run,
    RunStatus,
    Session,
)


class Multitask(StrEnum):
    """What a message posted while its session has an active run does."""

    REJECT = "reject"  # 409, naming the active run
    ENQUEUE = "enqueue"  # wait for the runs before it to end
    INTERRUPT = "interrupt"  # cancel those runs (the active one at its next boundary), then run


@dataclass(frozen=True)
class Started:
    """A waiting message joined the history; its run is queued, for the caller to enqueue."""

    run: Run
    message: Message


# The advisory lock space of the session locks (the two-key form: this key, then 32 bits of the
# session's id); nothing else in hango takes advisory locks.
_SESSION_LOCKS = 0x68616E67  # "hang"


def _lock_key(session_id: uuid.UUID | str) -> tuple[int, int]:
    """32 random bits of the id. A time-ordered (version 7) id begins with its millisecond, so
    its first 32 bits are those of sessions made within the same 65 seconds: its last 32 are
    random. An earlier, random (version 4) id keeps the key it always had, its first 32 bits, so
    a worker of the release before this one still takes the same lock for it."""
    raw = uuid.UUID(str(session_id))
    part = raw.bytes[12:] if raw.version == 7 else raw.bytes[:4]
    return _SESSION_LOCKS, int.from_bytes(part, signed=True)


def lock_session(session_id: uuid.UUID | str) -> None:
    """In the caller's transaction: the session's queue lock, which every change that makes one
    of its runs active, or ends one outside a worker, holds until commit; taken first.

    A transaction-scoped advisory lock, not the session's row: a worker holding its run's row
    writes the session's row (a compaction summary) and takes KEY SHARE on it (each message's
    foreign key), so a post holding the session's row while it waits for the active run's
    (:func:`active_run`) could deadlock with it. No worker holds a run's row while it waits for
    this lock. (SQLite, single-writer, needs none.)"""
    database().lock(_lock_key(session_id))


def try_lock_session(session_id: uuid.UUID | str) -> bool:
    """:func:`lock_session` when no one holds it, without waiting: whether it was taken."""
    return database().try_lock(_lock_key(session_id))


# Plain SQL for the read of every post, one statement (a post's session has no active run nor
# waiting message, most of the time): the ORM compiled it anew each time, as two.
_ACTIVE_OR_WAITING = (
    "SELECT (SELECT id FROM runs WHERE session_id = %s AND status IN "
    f"({', '.join(['%s'] * len(ACTIVE_RUN_STATUSES))}) LIMIT 1), "
    "EXISTS (SELECT 1 FROM pending_messages WHERE session_id = %s)")
_WAITING = "SELECT 1 FROM pending_messages WHERE session_id = %s LIMIT 1"


def active_run(session_id: uuid.UUID) -> tuple[Run | None, bool]:
    """The session's active run, its row locked (NO KEY UPDATE) until the caller commits, or
    None; and whether a message waits in its queue. An active run's end waits for that commit;
    an end already under way is waited for, and then the run is no longer active. The caller
    holds the session's lock.

    A plain read finds whether there is one first: none seen means none can appear before the
    caller commits (a run becomes active only under the session's lock) and none is locked."""
    key = uuid_param(session_id)
    ((active_id, waiting),) = fetch(_ACTIVE_OR_WAITING, [key, *ACTIVE_RUN_STATUSES, key])
    return _found(session_id, active_id, waiting)


def locked_active_run(session_id: uuid.UUID) -> tuple[Run | None, bool]:
    """:func:`lock_session`, then :func:`active_run`: the lock and the read in one round trip
    (every post makes them, the lock after psycopg2's BEGIN)."""
    key = uuid_param(session_id)
    ((active_id, waiting),) = database().locked_fetch(
        _lock_key(session_id), _ACTIVE_OR_WAITING, [key, *ACTIVE_RUN_STATUSES, key])
    return _found(session_id, active_id, waiting)


def _found(session_id: uuid.UUID, active_id: Any, waiting: Any) -> tuple[Run | None, bool]:
    if active_id is None:
        return None, bool(waiting)
    active = (Run.objects.select_for_update(no_key=True)
              .filter(session_id=session_id, status__in=ACTIVE_RUN_STATUSES).first())
    if active is None:  # it ended meanwhile, and its end may have started a waiting message
        return None, bool(fetch(_WAITING, [uuid_param(session_id)]))
    return active, bool(waiting)


def enqueue(session: Session, content: list[dict[str, Any]]) -> tuple[Message, Run]:
    """Queue a message behind the session's runs (the caller holds its lock): its run is
    pending; the message, unsaved, has no seq until it joins the history."""
    run = Run.objects.create(session=session, agent_id=session.agent_id,
                             status=RunStatus.PENDING, agent_version=versions.for_new_run(session))
    pending = PendingMessage.objects.create(session=session, run=run, content=content)
    append_events(run, [status_event(run)])
    run.save(update_fields=["event_seq"])
    return pending.as_message(), run


def cancel_waiting(session_id: uuid.UUID) -> list[uuid.UUID]:
    """Ask every pending run of the session to cancel (an interrupt behind them): each one's
    message still joins the history in its turn, its run cancelled without running."""
    ids = list(Run.objects.filter(session_id=session_id, status=RunStatus.PENDING,
                                  cancel_requested=False).values_list("pk", flat=True))
    Run.objects.filter(pk__in=ids).update(cancel_requested=True, updated_at=timezone.now())
    return ids


def start_next(session_id: uuid.UUID) -> Started | None:
    """In the caller's transaction: if the session has no active run, its first waiting message
    joins the history and its run is queued; None when a run is active or nothing waits (the
    waiting messages whose runs were to be cancelled joined the history on the way)."""
    lock_session(session_id)
    # A plain read: no run becomes active without the lock held here, and an end under way
    # that this read misses is followed by its worker's own start_next.
    if Run.objects.filter(session_id=session_id, status__in=ACTIVE_RUN_STATUSES).exists():
        return None
    last = Message.objects.filter(session_id=session_id).aggregate(m=Max("seq"))["m"] or 0
    waiting = (PendingMessage.objects.filter(session_id=session_id).select_related("run")
               .order_by("position"))
    started = None
    for seq, pending in enumerate(waiting, start=last + 1):
        run = pending.run
        message = Message.objects.create(
            id=pending.message_id, session_id=session_id, seq=seq, role=Role.USER,
            content=pending.content, run=run, created_at=pending.created_at)
        pending.delete()
        if run.cancel_requested:
            finish_run(run, RunStatus.CANCELLED)
            count_cancelled(run)
            run.save()
            continue
        run.status = RunStatus.QUEUED
        append_events(run, [status_event(run)])
        run.save()
        started = Started(run, message)
        break
    Session.objects.filter(pk=session_id).update(updated_at=timezone.now())
    return started


def start_stalled(limit: int = 100) -> list[uuid.UUID]:
    """The reconciler's part: sessions whose messages wait while no run is active (the worker
    died between a run's end and starting the next) have their next run started, in the
    caller's transaction; the ids of the runs started, for the caller to send. A session whose
    lock another transaction holds is left to it."""
    busy = Run.objects.filter(session_id=OuterRef("session_id"), status__in=ACTIVE_RUN_STATUSES)
    stalled = list(PendingMessage.objects.filter(~Exists(busy))
                   .values_list("session_id", flat=True).distinct()[:limit])
    started = []
    for session_id in stalled:
        if try_lock_session(session_id) and (found := start_next(session_id)) is not None:
            started.append(found.run.pk)
    return started
