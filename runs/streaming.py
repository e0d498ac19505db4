"""The server-sent-event stream of a run: its durable events, polled from ``run_events``, and
between two polls the live text deltas of its model calls (:mod:`runs.live`).

A durable event's frame carries ``id: <seq>``; a ``message.delta`` frame carries no ``id:``,
so an EventSource's last event id stays the last durable seq and a reconnect with
``Last-Event-ID`` resumes the durable events exactly where they stopped (the deltas sent while
the follower was away are gone: the ``message.created`` events it then receives hold the whole
text). The stream subscribes before its first poll, so once it is open nothing of the run is
missed; in-process it also takes the deltas so far of a model call under way. A turn's deltas
are sent only from the first of its call on and without a gap (:meth:`_Follower.in_sequence`),
so joined they are the start of the text it stores, or there are none.

Between two polls the stream waits on the run's channel. Following a live one, it polls when
the run's worker, or a request, marks new events there (a turn committed, a status changed:
:func:`runs.live.events_added`), and every ``HANGO_EVENT_LIVE_POLL_SECONDS`` should a marker be
lost; without one, every ``HANGO_EVENT_POLL_SECONDS``. It holds no database connection between
its reads: a thousand streams open on a gevent web process share its pool.

On one stream a turn's deltas come after the events of the turns before it and before its own
events. Deltas travel apart from the commit (Redis, sent by a thread of the worker), so one may
arrive after its turn is committed: a stream about to send the events of a turn it has deltas
of first waits for that turn's end marker (at most :data:`SETTLE_SECONDS`), and drops a delta
of a turn whose events it has sent. And several turns may commit between two polls (turns that
only call tools are quick): a delta of a turn after the next one is held, and the stream polls
at once, since the turns before it are committed (:class:`_Follower`).
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
from runs import live, selectors
from runs.models import UNFINISHED_RUN_STATUSES, RunEvent
from runs.serializers import event_output

EVENT_DELTA = "message.delta"  # live only: never stored, no id
BATCH = 200  # durable events per poll
KEEP_ALIVE_SECONDS = 15
# How long a stream waits for the rest of a committed turn's deltas (until their end marker)
# before it sends the turn's events anyway (and drops whatever of that turn comes later).
SETTLE_SECONDS = 1.0


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
             read: Callable[[], selectors.StreamRead]) -> selectors.StreamRead:
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
        self.read: selectors.StreamRead | None = None
        self.error: BaseException | None = None


_reads = _SharedReads()


def delta_frame(payload: str) -> str:
    return f"event: {EVENT_DELTA}\ndata: {payload}\n\n"


class _Follower:
    """One open stream: where it is in the durable events, and the deltas it has taken and not
    sent yet (``held``), with the turns whose end marker it still waits for (``open``).

    A delta is sent only where its turn's place is: after every event of the turns before it,
    before its turn's events. The stream knows a turn's events from the poll (the run's turn as
    of them), not event by event, so it sends a delta of turn ``shown_turn + 1`` at once, and
    holds one of a later turn — which says the turns before it are committed — until their
    events are sent (it polls at once). A delta of a turn whose events were sent, or go out in
    the same poll as the events of an earlier turn whose place it cannot tell from theirs, is
    dropped: that turn's ``message.created`` holds its whole text."""

    def __init__(self, run_id: uuid.UUID, after: int, deltas: live.Subscription) -> None:
        self.run_id, self.after, self.deltas = run_id, after, deltas
        self.shown_turn = -1  # every event of the turns up to this one has been sent
        self.partial = False  # events of a turn after shown_turn were sent (a full batch)
        self.held: list[tuple[int, str]] = []  # (turn, frame) taken, in the order received
        self.open: set[int] = set()  # turns with deltas taken and no end marker yet
        # The index each turn's next delta must have to be sent; a turn whose deltas this
        # stream did not receive from its first on, or lost one of, is absent (none sent).
        self.next_index: dict[int, int] = {}
        self.idle_since = time.monotonic()
        # When the run's last marker reached this process (a read begun before it may not
        # see what it marks), from the subscription on; and whether one came since the poll.
        self.woken, self.marked = time.monotonic(), False

    def frames(self) -> Iterator[str]:
        knobs = hango()
        deadline = time.monotonic() + knobs.event_stream_max_seconds
        while time.monotonic() < deadline:
            events, status, turn = self.poll()
            yield from self.settled(turn)
            for event in events:
                yield durable_frame(event)
                self.after = event.seq
            if len(events) < BATCH:  # every event of the turns up to ``turn`` is sent
                self.shown_turn, self.partial = max(self.shown_turn, turn), False
                yield from self.release(self.shown_turn + 1)
            else:
                self.partial = True
            if events:
                self.idle_since = time.monotonic()
                # Read on at once after a full batch, or on a stream that is told of nothing;
                # a live one waits for the run's next marker: its batch held every event of
                # the turns up to the run's turn as of it.
                if self.partial or not self.deltas.live:
                    continue
            if status not in UNFINISHED_RUN_STATUSES:
                return
            if self.held or self.marked:  # a later turn's delta (its earlier turns are
                continue  # committed by now), or a marker that came during the poll
            if time.monotonic() - self.idle_since > KEEP_ALIVE_SECONDS:
                yield ": keep-alive\n\n"
                self.idle_since = time.monotonic()
            yield from self.live(knobs.event_live_poll_seconds if self.deltas.live
                                 else knobs.event_poll_seconds)

    def poll(self) -> selectors.StreamRead:
        """The next events, and the run's status and turn as of them (one statement: every
        event of the turns up to that one is in the batch, unless it is full, and none of a
        later turn), read (or another stream's read taken) after the run's last marker came."""
        self.marked = False
        try:
            return _reads.once((self.run_id, self.after), self.woken, lambda: (
                selectors.stream_read(run_id=self.run_id, after=self.after, limit=BATCH)))
        finally:
            release_connection()  # a stream holds no connection between its reads

    def live(self, seconds: float) -> Iterator[str]:
        """The deltas of the turn being written that arrive within ``seconds`` (the wait
        until the next poll); the run's marker of new events, or the first delta of a later
        turn, ends the wait."""
        until = time.monotonic() + seconds
        while (left := until - time.monotonic()) > 0:
            payload = self.deltas.get(left)
            if payload is None:
                continue
            turn = self.take(payload)
            if self.marked:
                return  # new events are committed: poll them now
            if turn is None:
                continue
            if turn != self.shown_turn + 1:
                return  # the turns before it are committed: poll them first
            self.idle_since = time.monotonic()
            yield from self.release(turn)

    def settled(self, turn: int) -> list[str]:
        """Before the events of the turns up to ``turn`` (committed) are sent: the deltas of
        the first of those turns (the batch starts with its events), once its end marker has
        come or :data:`SETTLE_SECONDS` have passed. The deltas received meanwhile are held;
        those of the batch's other turns are dropped."""
        first = self.shown_turn + 1
        placed = not self.partial and first <= turn
        until = time.monotonic() + SETTLE_SECONDS
        while True:
            left = until - time.monotonic() if placed and first in self.open else 0.0
            payload = self.deltas.get(max(left, 0.0))
            if payload is None:
                if left <= 0:
                    break
                continue
            self.take(payload)
        early = self.release(first) if placed else []
        self.held = [(t, frame) for t, frame in self.held if t > turn]
        self.open = {t for t in self.open if t > turn}  # an end that never came: given up
        self.next_index = {t: i for t, i in self.next_index.items() if t > turn}
        return early

    def take(self, payload: str) -> int | None:
        """Hold a delta to forward and return its turn; None for an end marker, a marker of
        new events (noted: the stream reads them before it waits again), or a delta that is
        stale (its turn's events were sent), out of place (:meth:`in_sequence`) or not one of
        ours."""
        try:
            data = json.loads(payload)
            turn = data["turn"]
        except (ValueError, TypeError, KeyError):
            return None
        if "seq" in data:  # a turn committed, a status changed
            self.marked, self.woken = True, self.deltas.arrived
            return None
        if not isinstance(turn, int):
            return None
        if "end" in data:
            self.open.discard(turn)
            return None
        if turn <= self.shown_turn or "text" not in data or not self.in_sequence(turn, data):
            return None
        self.open.add(turn)
        self.held.append((turn, delta_frame(payload)))
        return turn

    def in_sequence(self, turn: int, data: dict[str, Any]) -> bool:
        """Whether a delta goes on from the turn's deltas taken before it, so that joined they
        are the start of the text the turn stores. A model call's deltas count from index 0,
        and a call that starts again (tried again, its turn executed again) starts from 0
        again; a delta received twice is sent once; after one that never came (the stream
        subscribed after the call's first delta, through Redis; it fell behind) none of the
        turn's are sent until a call starts again: its ``message.created`` holds the text."""
        index = data.get("index")
        if not isinstance(index, int) or isinstance(index, bool):
            return False
        if index != 0 and index != self.next_index.get(turn):
            if index > self.next_index.get(turn, index):  # one before it never came
                del self.next_index[turn]
            return False
        self.next_index[turn] = index + 1
        return True

    def release(self, turn: int) -> list[str]:
        """The held deltas of ``turn``, in order, no longer held."""
        frames = [frame for t, frame in self.held if t == turn]
        if frames:
            self.held = [(t, frame) for t, frame in self.held if t != turn]
        return frames


def _frames(run_id: uuid.UUID, after: int) -> Iterator[str]:
    deltas, missed = live.follow(run_id) if hango().stream_deltas else (live.Silent(), [])
    try:
        follower = _Follower(run_id, after, deltas)
        for payload in missed:  # a model call under way in this process
            follower.take(payload)
        yield from follower.frames()
    finally:  # the response closes this generator when the client goes away
        deltas.close()


def event_stream_response(run_id: uuid.UUID, after: int) -> StreamingHttpResponse:
    response = StreamingHttpResponse(_frames(run_id, after), content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response
