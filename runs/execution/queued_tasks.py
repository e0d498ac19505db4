"""The runs whose tasks wait in the broker's run queue, for the reconciler to leave alone.

The reconciler sends again a queued run nobody leased once it has waited
``HANGO_RECONCILE_GRACE_SECONDS``: its task may never have arrived (a send that failed, a
crash between commit and send). But under a backlog a run's task can simply wait in the queue
longer than that — 5,000 runs posted at once on two worker processes of 1,000 slots each wait
minutes — and every pass then sent thousands of duplicates, at the recovered priority, ahead of
the runs they duplicated. A run whose task the queue still holds is not stranded: its turn
comes. So a pass that finds such an overdue run first reads which runs the queue holds
(:func:`waiting_runs`) and passes them over; what it sends is what the broker truly lost.

The tasks workers have reserved count too while they are recent (kombu's ``unacked_index``
holds when each was delivered): a worker holds a thousand reservations, and a run whose task
waits for its turn — prefetched and not yet started, or started and waiting at its process's
start gate (:mod:`runs.execution.concurrency`) — is not stranded either. Under a starved CPU
such a wait can pass the grace period, so every worker process keeps all its reservations
recent: a thread of
its own (:class:`_Renewer`, started with the worker by :func:`start_renewing`) sets the
delivery time of every task the process holds (Celery's ``reserved_requests``, which counts a
task from its delivery to its end) to now, a few times a grace period, in one command. A
reservation older than the grace period whose run nobody claimed belongs to a worker that died
(kombu keeps it until the visibility timeout, an hour): its run is sent again, as before.

Between the two, a task is in neither place for a moment: kombu's Redis transport takes it from
the list (BRPOP) and only then records it as reserved, in another command, once its process
reads the reply and gets a connection. Under a starved CPU a pass's read lasts seconds while
workers take dozens of tasks, and a pass that read a task's list before it was recorded found
the run in neither place and sent it again (the overload round of issue 35: each run sent again
had been taken from the list during the pass's read, and recorded after it). So a run is judged
lost only when two of this process's passes in a row miss it (:func:`left_alone`): a task in
that moment is reserved by the next pass, an interval later, or its run claimed; a task whose
worker died in that moment (kombu loses it for good) is still missing, and its run is sent
again one pass later than before.
"""

from __future__ import annotations

import logging
import re
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from celery import current_app

log = logging.getLogger(__name__)

RUN_QUEUE = "runs"  # settings.CELERY_TASK_ROUTES: every run task goes there
CHUNK = 2_000  # messages read at once
_UUID = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def waiting_runs(grace: float) -> frozenset[uuid.UUID]:
    """The run ids named by the tasks in the broker's run queue (every priority's list), and by
    the reservations made in the last ``grace`` seconds, read a chunk at a time; empty when the
    broker is not Redis or does not answer (the reconciler then judges by age alone)."""
    return _held(grace) or frozenset()


# The overdue runs this process's last pass found neither queued nor reserved (the reconciler
# thread is the only caller in a worker process).
_missed: frozenset[uuid.UUID] = frozenset()


def left_alone(grace: float, overdue: frozenset[uuid.UUID]) -> frozenset[uuid.UUID]:
    """Of the ``overdue`` runs (queued, no lease, untouched for the grace period), those a pass
    must not send again: the ones whose task the broker holds (:func:`waiting_runs`), and the
    ones it misses that the previous pass did not (a task between the list and its reservation,
    see the module's doc): sent again if the next pass misses them too.
    Empty, with nothing read, for no overdue run; empty when the broker is not Redis or does not
    answer (judged by age alone, as before)."""
    global _missed
    held = _held(grace) if overdue else None
    if held is None:
        _missed = frozenset()
        return frozenset()
    missed = overdue - held
    first = missed - _missed
    _missed = missed
    if first:
        log.info("%d overdue queued runs were neither queued nor reserved: sent again if the "
                 "next pass misses them too", len(first))
    return held | first


def missed() -> frozenset[uuid.UUID]:
    """The overdue runs the last pass of this process missed (:func:`left_alone`)."""
    return _missed


def _held(grace: float) -> frozenset[uuid.UUID] | None:
    """:func:`waiting_runs`; None when the broker is not Redis or does not answer."""
    found: set[bytes] = set()
    try:
        with current_app.connection_for_read() as conn:
            channel: Any = conn.default_channel  # kombu's Redis channel, untyped
            if not hasattr(channel, "_q_for_pri"):  # not kombu's Redis transport
                return None
            lists = {channel._q_for_pri(RUN_QUEUE, pri) for pri in channel.priority_steps}
            with channel.conn_or_acquire() as client:
                for name in lists:
                    start = 0
                    while chunk := client.lrange(name, start, start + CHUNK - 1):
                        _collect(found, chunk)
                        start += CHUNK
                recent = client.zrangebyscore(channel.unacked_index_key, time.time() - grace,
                                              "+inf")
                for at in range(0, len(recent), CHUNK):
                    _collect(found, client.hmget(channel.unacked_key, recent[at:at + CHUNK]))
    except Exception as exc:  # noqa: BLE001 (whatever the broker did: the pass goes on)
        log.warning("the run queue was not read (%s): queued runs are judged by age alone",
                    type(exc).__name__)
        return None
    return frozenset(uuid.UUID(raw.decode()) for raw in found)


def _collect(found: set[bytes], messages: list[bytes | None]) -> None:
    for message in messages:  # a task's one argument is its run's id
        if message is not None:  # acknowledged between the two reads
            found.update(_UUID.findall(message))


def keeper(request: Any, every: float) -> Callable[[], None] | None:
    """For a task being executed (its ``request``), what it calls while it waits to start: its
    reservation is kept recent — its delivery's time in kombu's ``unacked_index`` set to now
    — by this process's :class:`_Renewer` (every ``every`` seconds, the worker's reservation
    beat: :mod:`runs.execution.timings`), with all the process's others in one command. None
    for a task not delivered by kombu's Redis transport (run eagerly, say)."""
    tag = _tag(request)
    if not tag:
        return None
    return lambda: _Renewer.get(every).waits(tag)


def start_renewing(every: float) -> None:
    """Keep every task this process reserves recent from now on, every ``every`` seconds (a
    worker's start: the reconciler's bootstep, in the process that reserves the tasks)."""
    _Renewer.get(every)


def _tag(request: Any) -> str | None:
    # Celery passes the message's properties on (its delivery_info leaves the tag out).
    return (getattr(request, "properties", None) or {}).get("delivery_tag")


def _reserved_tags() -> set[str]:
    """The delivery tags of the tasks this worker process holds: reserved (prefetched, waiting
    for a slot), started, or waiting to start a run; empty outside a worker."""
    from celery.worker import state

    for _ in range(3):  # a non-green pool's consumer thread may add one meanwhile
        try:
            requests = list(state.reserved_requests)
            break
        except RuntimeError:  # the set changed size during the copy
            continue
    else:
        return set()
    return {tag for request in requests
            if (tag := getattr(getattr(request, "message", None), "delivery_tag", None))}


class _Renewer:
    """A thread of its own (a greenlet under gevent) that, every reservation beat (a quarter
    of the reconciler's grace period: :mod:`runs.execution.timings`), sets the delivery time
    of every task the process holds — and of any task that said it waits — to now: one Redis
    command for a thousand reservations, not a thousand. A task reserved and not yet started
    (prefetched behind a thousand runs, or its greenlet not yet scheduled under a starved CPU)
    says nothing, and was sent again once its reservation aged past the grace period; the
    process's list of reservations names it."""

    _one: _Renewer | None = None
    _one_lock = threading.Lock()

    def __init__(self, every: float) -> None:
        self.every = every
        self._lock = threading.Lock()
        self._tags: set[str] = set()
        threading.Thread(target=self._run, name="hango-reservations", daemon=True).start()

    @classmethod
    def get(cls, every: float) -> _Renewer:
        with cls._one_lock:
            if cls._one is None:
                cls._one = cls(every)
            return cls._one

    def waits(self, tag: str) -> None:
        with self._lock:
            self._tags.add(tag)

    def _run(self) -> None:
        while True:
            with self._lock:
                tags, self._tags = self._tags, set()
            if tags := tags | _reserved_tags():
                self._renew(tags)
            time.sleep(self.every)

    def _renew(self, tags: set[str]) -> None:
        try:
            app: Any = current_app  # its broker connection pool, typed wrongly by the stubs
            with app.pool.acquire(block=True) as conn:
                channel: Any = conn.default_channel
                now = time.time()
                with channel.conn_or_acquire() as client:
                    client.zadd(channel.unacked_index_key, dict.fromkeys(tags, now), xx=True)
        except Exception as exc:  # noqa: BLE001 (at worst the reconciler sends a duplicate)
            log.warning("%d tasks' reservations were not renewed (%s)", len(tags),
                        type(exc).__name__)
