"""The server-sent-event stream of a run: its durable events, read from ``run_events``, and
between them the live text deltas of its model calls, in the order of the run's channel
(:mod:`runs.live.relay`).

A durable event's frame carries ``id: <seq>``; a ``message.delta`` frame carries no ``id:``,
so an EventSource's last event id stays the last durable seq and a reconnect with
``Last-Event-ID`` resumes the durable events exactly where they stopped (the deltas sent while
the follower was away are gone: the ``message.created`` events it then receives hold the whole
text). The stream subscribes before its first read, so once it is open nothing of the run is
missed; in-process it also takes the deltas so far of a model call under way. A turn's deltas
are sent only from the first of its call on and without a gap (:meth:`_Follower.in_sequence`),
so joined they are the start of the text it stores, or there are none.

The run's channel carries its deltas and, after each commit, a marker of the committed turn
(:func:`runs.live.relay.events_added`), all from the one connection the run publishes on, so in the
order they were written: a turn's deltas, then its marker, then the next turn's deltas. The
stream forwards the deltas as they come and, on a marker of events it has not sent, reads them
(one statement) and sends them: a turn's deltas come after the events of the turns before it
and before its own. A marker can be lost (pub/sub is fire and forget, a publisher that failed
drops what it sends for a while, a follower too far behind loses some), so the stream also
reads every ``HANGO_EVENT_LIVE_POLL_SECONDS``, and at once on a delta of a turn after the next,
which says the turns before it are committed. Following no live channel, it reads every
``HANGO_EVENT_POLL_SECONDS``. It holds no database connection between its reads: a thousand
streams open on a gevent web process share its pool.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from django.http import StreamingHttpResponse
from rest_framework.renderers import BaseRenderer

from hango_project.config import hango
from hango_project.pgpool import release as release_connection
from runs.api.serializers import event_output
from runs.execution.store import StreamRead
from runs.intake import selectors
from runs.live import relay
from runs.models import UNFINISHED_RUN_STATUSES, RunEvent

EVENT_DELTA = "message.delta"  # live only: never stored, no id
BATCH = 200  # durable events per poll
KEEP_ALIVE_SECONDS = 15


class EventStreamRenderer(BaseRenderer):
    """Lets DRF negotiate ``text/event-stream``; only errors are rendered through it."""

    media_type = "text/event-stream"
    format = "sse"
    charset = "utf-8"

    def render(self, data: Any, accepted_media_type: str | None = None,
               renderer_context: Mapping[str, Any] | None = None) -> bytes:
        return f"event: error\ndata: {json.dumps(data)}\n\n".encode()


def durable_frame(event: RunEvent) -> str:
    """A run event's frame, its data the event as the JSON page has it (made once per event
    object: the streams that read it together share it)."""
    frame: str | None = getattr(event, "_frame", None)
    if frame is None:
        payload = json.dumps(event_output(event))
        frame = event._frame = f"id: {event.seq}\nevent: {event.type}\ndata: {payload}\n\n"  # type: ignore[attr-defined]
    return frame


class _SharedReads:
    """The reads of a run's events that its streams on this process make at once, made once:
    a stream whose read (the run, the seq after which) is already under way, begun after the
    marker that woke it, takes that read's events. Twenty people watching one run cost one
    read a turn, not twenty."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._under_way: dict[tuple[uuid.UUID, int], _Read] = {}

    def once(self, key: tuple[uuid.UUID, int], since: float,
             read: Callable[[], StreamRead]) -> StreamRead:
        with self._lock:
            current = self._under_way.get(key)
            joined = current is not None and current.began >= since
            if not joined:
                current = self._under_way[key] = _Read()
        assert current is not None
        if joined:
            release_connection()  # the read it waits for may be waiting for a connection
            current.done.wait()
            if current.read is not None:
                return current.read
            return read()  # the read it joined failed: its own says why
        try:
            current.read = read()
            return current.read
        except BaseException as exc:
            current.error = exc
            raise
        finally:
            with self._lock:
                if self._under_way.get(key) is current:
                    del self._under_way[key]
            current.done.set()


class _Read:
    def __init__(self) -> None:
        self.began = time.monotonic()
        self.done = threading.Event()
        self.read: StreamRead | None = None
        self.error: BaseException | None = None


_reads = _SharedReads()


def delta_frame(payload: str) -> str:
    return f"event: {EVENT_DELTA}\ndata: {payload}\n\n"


class _Follower:
    """One open stream: the durable events it has sent (up to ``after``) and the run as of its
    last read, and the model call whose deltas it forwards.

    A delta of the turn after the run's (the turn being written) is forwarded at once; one of a
    committed turn is dropped: its ``message.created`` holds the text. The run's turn is the one
    its last read found; of a marker the stream needs only the ``seq``, to tell whether it has
    sent what the marker announces."""

    def __init__(self, run_id: uuid.UUID, after: int, channel: relay.Subscription) -> None:
        self.run_id, self.after, self.channel = run_id, after, channel
        self.turn, self.active = -1, True  # the run's turn and whether it runs, as last read
        # When the last read was, and when the last marker reached this process (a read begun
        # before it may not see what it marks), from the subscription on.
        self.read_at = self.woken = self.idle_since = time.monotonic()
        # The turn of the model call whose deltas are forwarded and its next delta's index.
        self.call: tuple[int, int] | None = None

    def frames(self, missed: list[str]) -> Iterator[str]:
        """Every event of the run and its deltas, until it ends (or the stream's time is up);
        ``missed``: the deltas of a model call under way in this process when it subscribed."""
        knobs = hango()
        deadline = time.monotonic() + knobs.event_stream_max_seconds
        yield from self.read()
        for delta in missed:
            yield from self.take(delta)
        while self.active and (now := time.monotonic()) < deadline:
            every = (knobs.event_live_poll_seconds if self.channel.live
                     else knobs.event_poll_seconds)
            wake = min(self.read_at + every, deadline, self.idle_since + KEEP_ALIVE_SECONDS)
            if (payload := self.channel.get(wake - now)) is not None:
                yield from self.take(payload)
            elif time.monotonic() >= self.read_at + every:
                yield from self.read()  # a marker may have been lost
            elif time.monotonic() >= self.idle_since + KEEP_ALIVE_SECONDS:
                yield ": keep-alive\n\n"
                self.idle_since = time.monotonic()

    def take(self, payload: str) -> Iterator[str]:
        """What a message of the run's channel sends: for a marker of events not sent yet, those
        events; for a delta of the turn being written, the delta (if :meth:`in_sequence`); for
        one of a later turn, the events of the turns before it (their marker was lost), then
        the delta if it is now of the turn being written; else nothing."""
        try:
            data = json.loads(payload)
            turn = data["turn"]
        except (ValueError, TypeError, KeyError):
            return
        if not isinstance(turn, int):
            return
        if isinstance(data.get("seq"), int):  # a commit's marker
            if data["seq"] > self.after:
                self.woken = self.channel.arrived
                yield from self.read()
            return
        if "text" not in data:
            return
        if turn > self.turn + 1:  # the turns before it are committed
            self.woken = self.channel.arrived
            yield from self.read()
        if self.active and turn == self.turn + 1 and self.in_sequence(turn, data.get("index")):
            self.idle_since = time.monotonic()
            yield delta_frame(payload)

    def read(self) -> Iterator[str]:
        """The events after ``after``, batch after batch, each read (or another stream's read
        taken) after the run's last marker came; the run's status and turn as of them noted."""
        while True:
            try:
                events, status, turn = _reads.once(
                    (self.run_id, self.after), self.woken, lambda: selectors.stream_read(
                        run_id=self.run_id, after=self.after, limit=BATCH))
            finally:
                release_connection()  # a stream holds no connection between its reads
            self.read_at = time.monotonic()
            self.turn, self.active = max(self.turn, turn), status in UNFINISHED_RUN_STATUSES
            for event in events:
                yield durable_frame(event)
                self.after = event.seq
            if events:
                self.idle_since = time.monotonic()
            if len(events) < BATCH:
                return

    def in_sequence(self, turn: int, index: Any) -> bool:
        """Whether a delta goes on from the deltas of its call forwarded before it, so that
        joined they are the start of the text the turn stores. A model call's deltas count from
        index 0, and a call that starts again (tried again, its turn executed again) starts from
        0 again; a delta received twice is sent once; after one that never came (the stream
        subscribed after the call's first delta, through Redis; it fell behind) none of the
        call's are sent until a call starts again: its ``message.created`` holds the text."""
        if not isinstance(index, int) or isinstance(index, bool):
            return False
        expected = self.call[1] if self.call is not None and self.call[0] == turn else None
        if index != 0 and index != expected:
            if expected is not None and index > expected:  # one before it never came
                self.call = None
            return False
        self.call = (turn, index + 1)
        return True


def _frames(run_id: uuid.UUID, after: int) -> Iterator[str]:
    channel, missed = relay.follow(run_id) if hango().stream_deltas else (relay.Silent(), [])
    try:
        yield from _Follower(run_id, after, channel).frames(missed)
    finally:  # the response closes this generator when the client goes away
        channel.close()


def event_stream_response(run_id: uuid.UUID, after: int) -> StreamingHttpResponse:
    response = StreamingHttpResponse(_frames(run_id, after), content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response
