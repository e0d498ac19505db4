"""A run's live text deltas: published by the worker as the model writes, read by the run's
event streams, never stored.

Each run has one channel, ``hango:run:<run id>:deltas``; a message on it is the JSON of one
``message.delta`` event, ``{"run", "turn", "index", "text"}``, which the event stream forwards
as it is, or a marker that the run has new durable events (:func:`events_added`), which makes
the stream read them now. With ``HANGO_LIVE_REDIS_URL`` (the broker's Redis by default) the
channel is a Redis pub/sub channel, so a follower on any web process sees any worker's deltas.
(Pub/sub channels belong to the whole Redis server, not to its numbered database: the run id in
the name keeps runs apart.) Without it — the embedded quickstart, where runs execute on a
thread of the web process — the channel lives in this process (:class:`LocalHub`), and only
followers served by the process running the model see the deltas.

Publishing is fire and forget: a delta is one PUBLISH written to one of the process's
:data:`PUBLISH_CONNECTIONS` connections (the same one for every delta of a run, so they stay in
order), its reply not waited for, never retried: a worker running a thousand runs at once holds
that many connections to Redis, not one per run. Connecting (or a write that blocks) is bounded
by ``HANGO_LIVE_PUBLISH_TIMEOUT``; after a failure this process drops every delta for
:data:`PAUSE_SECONDS`, so a Redis outage slows a run by at most one timeout per pause and never
fails it. A web process's streams share one subscribing connection (:class:`_Fanout`). A
follower whose subscription fails, or breaks, goes on with the durable events alone.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import threading
import time
import uuid
from functools import lru_cache
from typing import Protocol
from urllib.parse import urlsplit

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from hango_project.config import hango

log = logging.getLogger(__name__)

PAUSE_SECONDS = 5.0  # how long a process drops deltas after a failed publish
READ_REPLIES_EVERY = 32  # a publisher reads the replies that have arrived every so many sends
MAX_UNANSWERED = 4_096  # publishes without a reply after which Redis counts as hung
FOLLOWER_BACKLOG = 10_000  # deltas an in-process follower may fall behind before losing some
PUBLISH_CONNECTIONS = 4  # a process's connections to publish on, each shared by its runs

# A follower's queue: each payload with when it reached this process; None, its channel lost.
Inbox = queue.Queue[tuple[str, float] | None]


def channel(run_id: uuid.UUID | str) -> str:
    return f"hango:run:{run_id}:deltas"


class Subscription(Protocol):
    def get(self, timeout: float) -> str | None:
        """The next delta's JSON, waiting up to ``timeout`` seconds; None if none came."""
        ...

    @property
    def live(self) -> bool:
        """Whether what is published still arrives (the run's events markers with it)."""
        ...

    @property
    def arrived(self) -> float:
        """When (``time.monotonic()``) the payload :meth:`get` returned last reached this
        process."""
        ...

    def close(self) -> None: ...


class Hub(Protocol):
    def publish(self, channel: str, payload: str) -> None:
        """Send ``payload`` to the channel's followers now, or drop it; never raises."""
        ...

    def subscribe(self, channel: str) -> Subscription:
        """Follow ``channel``: deltas published from the moment this returns are received."""
        ...


class RunDeltas:
    """The loop's :class:`~harness.loop.DeltaSink` for one run: each delta published on the
    run's channel as the JSON the event stream forwards, and after a stream's last delta an end
    marker, ``{"run", "turn", "end": <deltas>}``, which the stream does not forward: it tells a
    follower it has the turn's whole text, so it may send the turn's events."""

    def __init__(self, run_id: uuid.UUID | str, hub: Hub) -> None:
        self.channel = channel(run_id)
        self._head = f'{{"run": "{run_id}", "turn": '
        self._publish = hub.publish

    def delta(self, turn: int, index: int, text: str) -> None:
        self._publish(self.channel,
                      f'{self._head}{turn}, "index": {index}, "text": {json.dumps(text)}}}')

    def end(self, turn: int, count: int) -> None:
        self._publish(self.channel, f'{self._head}{turn}, "end": {count}}}')


def events_added(run_id: uuid.UUID | str) -> None:
    """Tell the run's followers it has new durable events (a committed turn, a new status):
    a marker on its channel, ``{"run", "events": true}``, after which a stream reads them at
    once rather than at its next poll. Fire and forget, as a delta; nothing when runs do not
    stream (no stream follows the channel then)."""
    if hango().stream_deltas:
        hub().publish(channel(run_id), f'{{"run": "{run_id}", "events": true}}')


def is_events_marker(payload: str) -> bool:
    return payload.endswith('"events": true}')


def hub() -> Hub:
    """The hub of this process's settings: Redis, or the in-process one."""
    knobs = hango()
    if knobs.live_redis_url:
        return _redis_hub(knobs.live_redis_url, knobs.live_publish_timeout)
    return LOCAL


def run_deltas(run_id: uuid.UUID | str) -> RunDeltas | None:
    """The delta sink of a run about to execute; None when runs do not stream."""
    return RunDeltas(run_id, hub()) if hango().stream_deltas else None


# -- in this process ------------------------------------------------------------------------


class LocalHub:
    """Channels within this process: each follower a bounded queue (a follower that falls
    :data:`FOLLOWER_BACKLOG` deltas behind loses the newer ones, never blocks the run)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._followers: dict[str, tuple[Inbox, ...]] = {}

    def publish(self, channel: str, payload: str) -> None:
        arrived = time.monotonic()
        for follower in self._followers.get(channel, ()):
            try:
                follower.put_nowait((payload, arrived))
            except queue.Full:
                pass

    def subscribe(self, channel: str) -> Subscription:
        follower: Inbox = queue.Queue(maxsize=FOLLOWER_BACKLOG)
        with self._lock:
            self._followers[channel] = (*self._followers.get(channel, ()), follower)
        return _LocalSubscription(self, channel, follower)

    def leave(self, channel: str, follower: Inbox) -> None:
        with self._lock:
            left = tuple(f for f in self._followers.get(channel, ()) if f is not follower)
            if left:
                self._followers[channel] = left
            else:
                self._followers.pop(channel, None)


class _LocalSubscription:
    def __init__(self, hub: LocalHub, channel: str, follower: Inbox) -> None:
        self._hub, self._channel, self._follower = hub, channel, follower
        self.arrived = 0.0
        # Markers come only from runs executed in this process: none with a broker (its
        # workers publish nowhere this process hears), so the stream polls as before.
        knobs = hango()
        self.live = knobs.run_inline or not knobs.broker_url

    def get(self, timeout: float) -> str | None:
        try:
            got = self._follower.get(timeout=timeout) if timeout > 0 else \
                self._follower.get_nowait()
        except queue.Empty:
            return None
        assert got is not None  # this hub never loses its channel
        payload, self.arrived = got
        return payload

    def close(self) -> None:
        self._hub.leave(self._channel, self._follower)


LOCAL = LocalHub()


# -- through Redis --------------------------------------------------------------------------


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


class Silent:
    """No deltas: waiting on it is sleeping (a stream whose subscription failed)."""

    live = False
    arrived = 0.0

    def get(self, timeout: float) -> str | None:
        if timeout > 0:
            time.sleep(timeout)
        return None

    def close(self) -> None:
        pass


@lru_cache(maxsize=4)
def _redis_hub(url: str, timeout: float) -> RedisHub:
    return RedisHub(url, timeout)


# A forked child makes hubs of its own: a slot's lock may have been held by another thread of
# the parent as it forked, and the parent's connections are the parent's.
os.register_at_fork(after_in_child=_redis_hub.cache_clear)
