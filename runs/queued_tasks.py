"""The runs whose tasks wait in the broker's run queue, for the reconciler to leave alone.

The reconciler sends again a queued run nobody leased once it has waited
``HANGO_RECONCILE_GRACE_SECONDS``: its task may never have arrived (a send that failed, a
crash between commit and send). But under a backlog a run's task can simply wait in the queue
longer than that — 5,000 runs posted at once on two worker processes of 1,000 slots each wait
minutes — and every pass then sent thousands of duplicates, at the recovered priority, ahead of
the runs they duplicated. A run whose task the queue still holds is not stranded: its turn
comes. So a pass first reads which runs the queue holds (:func:`waiting_runs`) and passes them
over; what it sends is what the broker truly lost.

The tasks workers have reserved count too while they are recent (kombu's ``unacked_index``
holds when each was delivered): a worker holds a thousand reservations, and a run whose task
waits for its turn to start (:mod:`runs.intake`) is not stranded either. Such a task keeps its
reservation recent while it waits (:func:`keeper`: under a starved CPU the wait can pass the
grace period). A reservation older than the grace period whose run nobody claimed belongs to a
worker that died (kombu keeps it until the visibility timeout, an hour): its run is sent again,
as before.
"""

from __future__ import annotations

import logging
import re
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
    found: set[bytes] = set()
    try:
        with current_app.connection_for_read() as conn:
            channel: Any = conn.default_channel  # kombu's Redis channel, untyped
            if not hasattr(channel, "_q_for_pri"):  # not kombu's Redis transport
                return frozenset()
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
        return frozenset()
    return frozenset(uuid.UUID(raw.decode()) for raw in found)


def _collect(found: set[bytes], messages: list[bytes | None]) -> None:
    for message in messages:  # a task's one argument is its run's id
        if message is not None:  # acknowledged between the two reads
            found.update(_UUID.findall(message))


def keeper(request: Any) -> Callable[[], None] | None:
    """For a task being executed (its ``request``), what keeps its reservation recent: its
    delivery's time in kombu's ``unacked_index`` set to now, if it is still there. None for a
    task not delivered by kombu's Redis transport (run eagerly, say)."""
    tag = (getattr(request, "delivery_info", None) or {}).get("delivery_tag")
    if not tag:
        return None

    def keep() -> None:
        try:
            app: Any = current_app  # its broker connection pool, typed wrongly by the stubs
            with app.pool.acquire(block=True) as conn:
                channel: Any = conn.default_channel
                if hasattr(channel, "unacked_index_key"):
                    with channel.conn_or_acquire() as client:
                        client.zadd(channel.unacked_index_key, {tag: time.time()}, xx=True)
        except Exception as exc:  # noqa: BLE001 (at worst the reconciler sends a duplicate)
            log.warning("a waiting task's reservation was not renewed (%s)", type(exc).__name__)

    return keep
