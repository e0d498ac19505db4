"""The Redis transport hango's Celery app uses (``CELERY_BROKER_TRANSPORT``): kombu's own, with
one change, for a worker whose every slot is busy.

A worker reserves at most as many run tasks as it has slots (prefetch multiplier 1). While all
are reserved, kombu stops its BRPOP and the loop a gevent worker runs (Celery's ``synloop``)
waits in ``drain_events(timeout=2.0)`` for events of its other sockets, or sleeps a second when
it has none: a slot freed by a finished run stayed empty for up to two seconds before the next
task was taken, with the queue full. Here, while the reservations are full, each wait is at
most :data:`FULL_WAIT_SECONDS`, so the next task is taken within that of a slot freeing.
"""

from __future__ import annotations

from typing import Any

from kombu.transport import redis

FULL_WAIT_SECONDS = 0.05


class _Poller(redis.MultiChannelPoller):
    _channels: set[Any]  # kombu's, of every channel on the poller

    def get(self, callback: Any, timeout: float | None = None) -> Any:
        if timeout is None or timeout > FULL_WAIT_SECONDS:
            full = any(channel.active_queues and not channel.qos.can_consume()
                       for channel in self._channels)
            if full:
                timeout = FULL_WAIT_SECONDS
        return super().get(callback, timeout)


class Transport(redis.Transport):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cycle = _Poller()
