"""A run's live text deltas: published by the worker as the model writes, read by the run's
event streams, never stored.

Each run has one channel, ``hango:run:<run id>:deltas``; a message on it is the JSON of one
``message.delta`` event, ``{"run", "turn", "index", "text"}``, which the event stream forwards
as it is, or a marker that what the run wrote is committed (:func:`events_added`), which makes
the stream read its new events now. With ``HANGO_LIVE_REDIS_URL`` (the broker's Redis by
default) the channel is a Redis pub/sub channel, so a follower on any web process sees any
worker's deltas. (Pub/sub channels belong to the whole Redis server, not to its numbered
database: the run id in the name keeps runs apart.) Without it — the embedded quickstart,
where runs execute on a thread of the web process — the channel lives in this process
(:class:`LocalHub`), and only followers served by the process running the model see the
deltas; there, a stream that opens while a model call is under way starts with its deltas so
far (:class:`CallsUnderWay`).

Publishing is fire and forget: a delta is one PUBLISH written to one of the process's few
shared connections (the same one for every delta and marker of a run, so they stay in the
order they were written: what a follower relies on, :mod:`runs.api.streaming`), its reply not
waited for, never retried: a worker running a thousand runs at once holds four connections to
Redis, not one per run. Connecting (or a write that blocks) is bounded by
``HANGO_LIVE_PUBLISH_TIMEOUT``; after a failure the process drops every delta for a few seconds,
so a Redis outage slows a run by at most one timeout per pause and never fails it. A web
process's streams share one subscribing connection. A follower whose subscription fails, or
breaks, goes on with the durable events alone. The Redis side is :mod:`runs.live.redis`; what
both sides share, :mod:`runs.live.channel`.
"""

from __future__ import annotations

import json
import queue
import threading
import time
import uuid

import celery

from hango_project.config import hango
from runs.live.channel import FOLLOWER_BACKLOG, Hub, Inbox, Subscription
from runs.live.channel import Silent as Silent  # a stream's fallback, for runs.api.streaming


def channel(run_id: uuid.UUID | str) -> str:
    return f"hango:run:{run_id}:deltas"


class RunDeltas:
    """The loop's :class:`~harness.deltas.DeltaSink` for one run: each delta published on the
    run's channel as the JSON the event stream forwards. A call's end is not published: the
    turn's commit marker (:func:`events_added`), after its deltas on the same channel, is what
    a follower waits for.

    Given ``calls`` (a run executing in the process that serves its streams) it publishes
    through them, which keep the deltas of the model call under way for a stream that opens
    mid-call until the call ends."""

    def __init__(self, run_id: uuid.UUID | str, hub: Hub, *,
                 calls: CallsUnderWay | None = None) -> None:
        self.channel = channel(run_id)
        self._head = f'{{"run": "{run_id}", "turn": '
        self._publish = hub.publish
        self._calls = calls

    def delta(self, turn: int, index: int, text: str) -> None:
        payload = f'{self._head}{turn}, "index": {index}, "text": {json.dumps(text)}}}'
        if self._calls is None:
            self._publish(self.channel, payload)
        else:
            self._calls.delta(self.channel, payload, first=index == 0)

    def end(self, turn: int, count: int) -> None:
        if self._calls is not None:
            self._calls.end(self.channel)


class CallsUnderWay:
    """The in-process hub, keeping the deltas published so far of each model call under way
    (at most :data:`FOLLOWER_BACKLOG` a call) until it ends: what a stream that opens
    mid-call missed. Without them a follower that connects after the model began to write (the
    quickstart's demo model writes its first word at once) would be sent the turn's text
    without its start. A subscription and the deltas it missed are taken at once (one lock with
    the publishing), so a delta is in one of the two, never both or neither."""

    def __init__(self, hub: LocalHub) -> None:
        self._hub = hub
        self._lock = threading.Lock()
        self._calls: dict[str, list[str]] = {}

    def delta(self, channel: str, payload: str, *, first: bool) -> None:
        with self._lock:
            if first:  # a call starts (or starts again: tried again, its turn re-executed)
                self._calls[channel] = [payload]
            elif len(kept := self._calls.setdefault(channel, [])) < FOLLOWER_BACKLOG:
                kept.append(payload)
            self._hub.publish(channel, payload)

    def end(self, channel: str) -> None:
        with self._lock:
            self._calls.pop(channel, None)

    def subscribe(self, channel: str) -> tuple[Subscription, list[str]]:
        with self._lock:
            return self._hub.subscribe(channel), list(self._calls.get(channel, ()))


def events_added(run_id: uuid.UUID | str, *, turn: int, seq: int) -> None:
    """Tell the run's followers that what it wrote is committed: a marker on its channel,
    ``{"run", "turn", "seq"}`` (turn ``turn`` committed, the run's events up to ``seq``; a
    request that changes a run's status writes its events at the run's turn). Published
    after the commit on the channel its deltas take, so a follower has every delta of a turn
    before the turn's marker. Fire and forget, as a delta; nothing when runs do not stream (no
    stream follows the channel then)."""
    if hango().stream_deltas:
        hub().publish(channel(run_id), f'{{"run": "{run_id}", "turn": {turn}, "seq": {seq}}}')


def hub() -> Hub:
    """The hub of this process's settings: Redis, or the in-process one."""
    knobs = hango()
    if knobs.live_redis_url:
        from runs.live.redis import redis_hub  # redis-py's import only where it is used

        return redis_hub(knobs.live_redis_url, knobs.live_publish_timeout)
    return LOCAL


def run_deltas(run_id: uuid.UUID | str) -> RunDeltas | None:
    """The delta sink of a run about to execute; None when runs do not stream. Where a run
    executes in the process that serves its streams (the embedded quickstart's thread), its
    calls are kept for the streams that open while they are under way; not in a Celery task: a
    worker serves no stream, and without a Redis hub its deltas reach no follower at all."""
    if not hango().stream_deltas:
        return None
    current = hub()
    serving = current is LOCAL and not celery.current_task  # a proxy: false outside a task
    return RunDeltas(run_id, current, calls=CALLS if serving else None)


def follow(run_id: uuid.UUID | str) -> tuple[Subscription, list[str]]:
    """Subscribe to the run's channel: the subscription, and the deltas so far of its model
    call under way in this process, if any, which the stream takes first. Through Redis, none
    are kept: a stream that opens mid-call sends none of that call's deltas."""
    current = hub()
    if current is LOCAL:
        return CALLS.subscribe(channel(run_id))
    return current.subscribe(channel(run_id)), []


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
CALLS = CallsUnderWay(LOCAL)
