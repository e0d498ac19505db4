"""Live deltas through Redis pub/sub (:mod:`runs.live.relay` says what travels and why): a process
publishes on :data:`PUBLISH_CONNECTIONS` shared connections without waiting for replies, and
its followers share one subscribing connection (:class:`_Fanout`)."""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from functools import lru_cache
from urllib.parse import urlsplit

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from runs.live.channel import FOLLOWER_BACKLOG, Inbox, Silent, Subscription

log = logging.getLogger(__name__)

PAUSE_SECONDS = 5.0  # how long a process drops deltas after a failed publish
READ_REPLIES_EVERY = 32  # a publisher reads the replies that have arrived every so many sends
MAX_UNANSWERED = 4_096  # publishes without a reply after which Redis counts as hung
PUBLISH_CONNECTIONS = 4  # a process's connections to publish on, each shared by its runs


class RedisHub:
    """Channels in Redis pub/sub. A channel is published on one of :data:`PUBLISH_CONNECTIONS`
    connections, chosen by its name, on which a PUBLISH is written and not waited for
    (:class:`_Publisher`): the run pays one socket write per delta, no round trip; a lock keeps
    two runs' writes on one connection from interleaving."""

    def __init__(self, url: str, timeout: float) -> None:
        self.timeout = timeout
        self._pool = redis.ConnectionPool.from_url(
            url, socket_timeout=timeout, socket_connect_timeout=timeout,
            retry=Retry(NoBackoff(), 0), health_check_interval=0)
        self._client = redis.Redis(connection_pool=self._pool)
        parts = urlsplit(url)
        self._where = f"{parts.hostname}:{parts.port or 6379}" if parts.hostname else parts.path
        self._paused_until = 0.0
        self._slots = [_Slot() for _ in range(PUBLISH_CONNECTIONS)]
        self._fanout = _Fanout(self._client, timeout, self._where)

    @property
    def paused(self) -> bool:
        return time.monotonic() < self._paused_until

    def publish(self, channel: str, payload: str) -> None:
        if self._paused_until:
            if time.monotonic() < self._paused_until:
                return
            self._paused_until = 0.0
        slot = self.slot(channel)
        with slot.lock:
            publisher = slot.publisher
            try:
                if publisher is None or publisher.pid != os.getpid():  # a forked child: its own
                    publisher = slot.publisher = _Publisher(self._pool.get_connection())
                publisher.send(channel, payload)
            except (redis.RedisError, OSError) as exc:  # whatever Redis does, the run goes on
                slot.publisher = None
                if publisher is not None:
                    publisher.connection.disconnect()
                    self._pool.release(publisher.connection)  # type: ignore[arg-type]  # the pool made it
                self._paused_until = time.monotonic() + PAUSE_SECONDS
                log.warning("live deltas are dropped for %.0f s: publishing to Redis at %s "
                            "failed (%s)", PAUSE_SECONDS, self._where, type(exc).__name__)

    def slot(self, channel: str) -> _Slot:
        """Where ``channel`` is published: the same connection for all of it."""
        return self._slots[hash(channel) % len(self._slots)]

    def subscribe(self, channel: str) -> Subscription:
        return self._fanout.subscribe(channel)


class _Slot:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.publisher: _Publisher | None = None


class _Publisher:
    """One thread's connection, pipelining: each PUBLISH is written at once and its reply (the
    number of followers, of no use here) read later, when it has arrived — every
    :data:`READ_REPLIES_EVERY` sends, without waiting. A Redis that leaves
    :data:`MAX_UNANSWERED` of them unanswered counts as hung."""

    def __init__(self, connection: redis.connection.AbstractConnection) -> None:
        self.connection, self.pid = connection, os.getpid()
        self.sent = self.unanswered = 0

    def send(self, channel: str, payload: str) -> None:
        self.connection.send_command("PUBLISH", channel, payload, check_health=False)
        self.sent += 1
        self.unanswered += 1
        # Counted in sends: a read that finds only some replies arrived must not shift the next.
        if self.sent % READ_REPLIES_EVERY == 0:
            while self.unanswered and self.connection.can_read(timeout=0):
                self.connection.read_response()
                self.unanswered -= 1
            if self.unanswered >= MAX_UNANSWERED:
                raise redis.TimeoutError(f"{self.unanswered} publishes unanswered")


class _Fanout:
    """This process's one pub/sub connection, shared by all its followers: a thousand streams
    open on a web process hold one connection to Redis, not a thousand. A reader thread (a
    greenlet under gevent) takes every message and hands it to the followers of its channel,
    each a bounded queue, as :class:`LocalHub` does; a channel is subscribed while it has a
    follower. When the connection fails, every follower is told and goes on without deltas, and
    the next subscription connects anew."""

    def __init__(self, client: redis.Redis, timeout: float, where: str) -> None:
        self._client, self._timeout, self._where = client, timeout, where
        self._lock = threading.Lock()
        self._pubsub: redis.client.PubSub | None = None
        self._channels: dict[str, _Followers] = {}

    def subscribe(self, channel: str) -> Subscription:
        follower: Inbox = queue.Queue(maxsize=FOLLOWER_BACKLOG)
        try:
            with self._lock:
                if self._pubsub is None:
                    self._pubsub = self._client.pubsub()
                    pubsub = self._pubsub
                    threading.Thread(target=self._read, args=(pubsub,), daemon=True,
                                     name="live-fanout").start()
                entry = self._channels.get(channel)
                if entry is None:
                    entry = self._channels[channel] = _Followers()
                    self._pubsub.subscribe(channel)
                entry.queues.add(follower)
            # Redis confirms once the channel is subscribed: from then on nothing published
            # is missed.
            if not entry.confirmed.wait(self._timeout):
                raise redis.TimeoutError("no subscribe confirmation")
        except redis.RedisError as exc:
            self.leave(channel, follower)
            log.warning("a run's event stream follows no live deltas: subscribing in Redis at "
                        "%s failed (%s)", self._where, type(exc).__name__)
            return Silent()
        return _FanoutSubscription(self, channel, follower)

    def leave(self, channel: str, follower: Inbox) -> None:
        with self._lock:
            entry = self._channels.get(channel)
            if entry is None:
                return
            entry.queues.discard(follower)
            if not entry.queues:
                del self._channels[channel]
                if self._pubsub is not None:
                    try:
                        self._pubsub.unsubscribe(channel)
                    except redis.RedisError:  # the reader sees the failure and tells everyone
                        pass

    def _read(self, pubsub: redis.client.PubSub) -> None:
        try:
            while True:
                message = pubsub.get_message(timeout=1.0)
                if message is None:
                    continue
                channel = message["channel"].decode()
                with self._lock:
                    entry = self._channels.get(channel)
                    if entry is None:
                        continue
                    if message["type"] == "subscribe":
                        entry.confirmed.set()
                    elif message["type"] == "message":
                        data = message["data"].decode(), time.monotonic()
                        for follower in entry.queues:
                            try:
                                follower.put_nowait(data)
                            except queue.Full:  # it fell too far behind: it loses some
                                pass
        except Exception as exc:  # whatever broke the reading, every follower is told
            log.warning("the event streams of this process lost their live deltas: Redis at %s "
                        "failed (%s)", self._where, type(exc).__name__)
            with self._lock:
                lost, self._channels = self._channels, {}
                if self._pubsub is pubsub:
                    self._pubsub = None
            for entry in lost.values():
                for follower in entry.queues:
                    _tell_lost(follower)
            pubsub.close()


class _Followers:
    def __init__(self) -> None:
        self.queues: set[Inbox] = set()
        self.confirmed = threading.Event()


def _tell_lost(follower: Inbox) -> None:
    """Tell a follower its channel is gone (None), making room for the news if need be."""
    while True:
        try:
            follower.put_nowait(None)
            return
        except queue.Full:
            try:
                follower.get_nowait()
            except queue.Empty:
                pass


class _FanoutSubscription:
    def __init__(self, fanout: _Fanout, channel: str, follower: Inbox) -> None:
        self._fanout, self._channel = fanout, channel
        self._follower: Inbox | None = follower
        self._silent = Silent()
        self.arrived = 0.0

    @property
    def live(self) -> bool:
        return self._follower is not None

    def get(self, timeout: float) -> str | None:
        if self._follower is None:
            return self._silent.get(timeout)
        try:
            got = (self._follower.get(timeout=timeout) if timeout > 0
                   else self._follower.get_nowait())
        except queue.Empty:
            return None
        if got is None:  # the connection failed: the stream goes on with durable events
            self._follower = None
            return None
        payload, self.arrived = got
        return payload

    def close(self) -> None:
        if self._follower is not None:
            self._fanout.leave(self._channel, self._follower)
            self._follower = None


@lru_cache(maxsize=4)
def redis_hub(url: str, timeout: float) -> RedisHub:
    return RedisHub(url, timeout)


# A forked child makes hubs of its own: a slot's lock may have been held by another thread of
# the parent as it forked, and the parent's connections are the parent's.
os.register_at_fork(after_in_child=redis_hub.cache_clear)
