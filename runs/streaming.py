"""The server-sent-event stream of a run: its durable events, polled from ``run_events``, and
between two polls the live text deltas of its model calls (:mod:`runs.live`).

A durable event's frame carries ``id: <seq>``; a ``message.delta`` frame carries no ``id:``,
so an EventSource's last event id stays the last durable seq and a reconnect with
``Last-Event-ID`` resumes the durable events exactly where they stopped (the deltas sent while
the follower was away are gone: the ``message.created`` events it then receives hold the whole
text). The stream subscribes before its first poll, so once it is open nothing of the run is
missed.

On one stream a turn's deltas come before its events. Deltas travel apart from the commit
(Redis, sent by a thread of the worker), so one may arrive after its turn is committed: a
stream about to send the events of a turn it has sent deltas of first waits for that turn's end
marker (at most :data:`SETTLE_SECONDS`), and drops a delta of a turn whose events it has sent.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator, Mapping
from typing import Any

from django.http import StreamingHttpResponse
from rest_framework.renderers import BaseRenderer

from hango_project.config import hango
from runs import live, selectors
from runs.models import UNFINISHED_RUN_STATUSES, Run, RunEvent
from runs.serializers import RunEventOutput

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
    """A run event's frame, its data the event as the JSON page has it."""
    payload = json.dumps(RunEventOutput(event).data)
    return f"id: {event.seq}\nevent: {event.type}\ndata: {payload}\n\n"


def delta_frame(payload: str) -> str:
    return f"event: {EVENT_DELTA}\ndata: {payload}\n\n"


class _Follower:
    """One open stream: where it is in the durable events, and which turns' deltas it still
    waits for the end of (``open``) or takes as stale."""

    def __init__(self, run_id: uuid.UUID, after: int, deltas: live.Subscription) -> None:
        self.run_id, self.after, self.deltas = run_id, after, deltas
        self.shown_turn = -1  # every event of the turns up to this one has been sent
        self.open: set[int] = set()  # turns with deltas sent and no end marker yet
        self.idle_since = time.monotonic()

    def frames(self) -> Iterator[str]:
        knobs = hango()
        deadline = time.monotonic() + knobs.event_stream_max_seconds
        while time.monotonic() < deadline:
            events, status, turn = self.poll()
            early, later = self.settled(turn)
            yield from early
            for event in events:
                yield durable_frame(event)
                self.after = event.seq
            yield from later
            if len(events) < BATCH:
                self.shown_turn = turn
            if events:
                self.idle_since = time.monotonic()
                continue
            if status not in UNFINISHED_RUN_STATUSES:
                return
            if time.monotonic() - self.idle_since > KEEP_ALIVE_SECONDS:
                yield ": keep-alive\n\n"
                self.idle_since = time.monotonic()
            yield from self.live(knobs.event_poll_seconds)

    def poll(self) -> tuple[list[RunEvent], str | None, int]:
        """The next events, and the run's status and turn as of them (one statement: every
        event of the turns up to that one is in the batch, unless it is full, and none of a
        later turn). Without new events, the run's status, the turn as it was."""
        if events := self.events():
            return events, events[0].run_status, events[0].run_turn  # type: ignore[attr-defined]
        status = Run.objects.filter(pk=self.run_id).values_list("status", flat=True).first()
        # Finished since the read above? Its last events were committed with its status.
        if status not in UNFINISHED_RUN_STATUSES and (events := self.events()):
            return events, events[0].run_status, events[0].run_turn  # type: ignore[attr-defined]
        return [], status, self.shown_turn

    def events(self) -> list[RunEvent]:
        return selectors.run_events_after(run_id=self.run_id, after=self.after, limit=BATCH,
                                          with_run=True)

    def live(self, seconds: float) -> Iterator[str]:
        """The deltas that arrive within ``seconds`` (the wait until the next poll)."""
        until = time.monotonic() + seconds
        while (left := until - time.monotonic()) > 0:
            payload = self.deltas.get(left)
            if payload is not None and (taken := self.take(payload)) is not None:
                self.idle_since = time.monotonic()
                yield taken[1]

    def settled(self, turn: int) -> tuple[list[str], list[str]]:
        """Before the events of the turns up to ``turn`` (committed) are sent: the deltas
        received meanwhile, and — while one of those turns has deltas but no end marker yet —
        those arriving within :data:`SETTLE_SECONDS`; split into the frames of turns up to
        ``turn`` (sent before the events) and of later ones (after them)."""
        early: list[str] = []
        later: list[str] = []
        until = time.monotonic() + SETTLE_SECONDS
        while True:
            waiting = any(t <= turn for t in self.open)
            left = until - time.monotonic() if waiting else 0.0
            payload = self.deltas.get(max(left, 0.0))
            if payload is None:
                if left <= 0:
                    break
                continue
            if (taken := self.take(payload)) is not None:
                (early if taken[0] <= turn else later).append(taken[1])
        self.open = {t for t in self.open if t > turn}  # an end that never came: given up
        return early, later

    def take(self, payload: str) -> tuple[int, str] | None:
        """A delta to forward, with its turn; None for an end marker, or for a delta that is
        stale (its turn's events were sent) or not one of ours."""
        try:
            data = json.loads(payload)
            turn = data["turn"]
        except (ValueError, TypeError, KeyError):
            return None
        if not isinstance(turn, int):
            return None
        if "end" in data:
            self.open.discard(turn)
            return None
        if turn <= self.shown_turn or "text" not in data:
            return None
        self.open.add(turn)
        return turn, delta_frame(payload)


def _frames(run_id: uuid.UUID, after: int) -> Iterator[str]:
    deltas = (live.hub().subscribe(live.channel(run_id)) if hango().stream_deltas
              else live.Silent())
    try:
        yield from _Follower(run_id, after, deltas).frames()
    finally:  # the response closes this generator when the client goes away
        deltas.close()


def event_stream_response(run_id: uuid.UUID, after: int) -> StreamingHttpResponse:
    response = StreamingHttpResponse(_frames(run_id, after), content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response
