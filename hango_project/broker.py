"""The Redis transport hango's Celery app uses (``CELERY_BROKER_TRANSPORT``): kombu's own, with
two changes.

*A worker whose every slot is busy.*
A worker reserves at most as many run tasks as it has slots (prefetch multiplier 1). While all
are reserved, kombu stops its BRPOP and the loop a gevent worker runs (Celery's ``synloop``)
waits in ``drain_events(timeout=2.0)`` for events of its other sockets, or sleeps a second when
it has none: a slot freed by a finished run stayed empty for up to two seconds before the next
task was taken, with the queue full. Here, while the reservations are full, each wait is at
most :data:`FULL_WAIT_SECONDS`, so the next task is taken within that of a slot freeing.

*One client per channel.* kombu makes a new ``redis.Redis`` for every publish and for each
unacked-task bookkeeping step (``Channel.conn_or_acquire``), each building redis-py's table of
some 170 response callbacks: about 0.1 ms of CPU, twice a task in a worker and once per send in
the web process. A channel here keeps one, on the channel's own connection pool (a client is
safe to share: each command takes a connection from the pool), made anew if the pool is.

*A pool that waits.* kombu's pool for those commands holds at most ten connections
(``max_connections``) and raises ``MaxConnectionsError`` at the eleventh taker. A gevent worker
acknowledges each run's task from the run's own greenlet: with a thousand runs in flight and a
starved CPU, more than ten acknowledged at once and a run's task was left unacknowledged (a
CRITICAL in the log, the task delivered again after the visibility timeout). Here the pool is
redis-py's blocking one, of the same size: the eleventh taker waits for a connection, up to
:data:`POOL_WAIT_SECONDS` (a command holds one for at most ``HANGO_BROKER_TIMEOUT``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import redis as redis_py
from kombu.transport import redis

FULL_WAIT_SECONDS = 0.05
POOL_WAIT_SECONDS = 30.0


class _Poller(redis.MultiChannelPoller):
    _channels: set[Any]  # kombu's, of every channel on the poller

    def get(self, callback: Any, timeout: float | None = None) -> Any:
        if timeout is None or timeout > FULL_WAIT_SECONDS:
            full = any(channel.active_queues and not channel.qos.can_consume()
                       for channel in self._channels)
            if full:
                timeout = FULL_WAIT_SECONDS
        return super().get(callback, timeout)


class Channel(redis.Channel):
    _create_client: Callable[[], Any]  # kombu's: a new client on the channel's pool
    pool: Any  # kombu's: the channel's connection pool
    _sync_client: Any = None  # the channel's client for kombu's synchronous commands
    _connparams: Callable[..., dict[str, Any]]  # kombu's: the pool's parameters
    keyprefix_fanout: str  # kombu's

    @contextmanager
    def conn_or_acquire(self, client: Any = None) -> Iterator[Any]:
        if client:
            yield client
            return
        shared = self._sync_client
        if shared is None or shared.connection_pool is not self.pool:
            shared = self._sync_client = self._create_client()
        yield shared

    def _get_pool(self, asynchronous: bool = False) -> Any:
        if asynchronous:  # the poller's own (BRPOP, one at a time): kombu's
            return super()._get_pool(asynchronous=True)  # type: ignore[misc]  # untyped
        params = self._connparams(asynchronous=False)
        self.keyprefix_fanout = self.keyprefix_fanout.format(db=params["db"])
        return redis_py.BlockingConnectionPool(timeout=POOL_WAIT_SECONDS, **params)


class Transport(redis.Transport):
    Channel = Channel

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cycle = _Poller()
