"""The server-sent-event stream of a run: its durable events, polled from ``run_events``, and
between two polls the live text deltas of its model calls (:mod:`runs.live`).

A durable event's frame carries ``id: <seq>``; a ``message.delta`` frame carries no ``id:``,
so an EventSource's last event id stays the last durable seq and a reconnect with
``Last-Event-ID`` resumes the durable events exactly where they stopped (the deltas sent while
the follower was away are gone: the ``message.created`` events it then receives hold the whole
text). The stream subscribes before its first poll, so once it is open nothing of the run is
missed. A delta of a turn whose ``message.created`` was already sent is dropped (it can arrive
late: the worker publishes a turn's deltas before it commits the turn, but through another
connection), so on one stream a turn's deltas always come before its message.
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
from runs.models import ACTIVE_RUN_STATUSES, Run, RunEvent
from runs.serializers import RunEventOutput

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
    """A run event's frame, its data the event as the JSON page has it."""
    payload = json.dumps(RunEventOutput(event).data)
    return f"id: {event.seq}\nevent: {event.type}\ndata: {payload}\n\n"


def delta_frame(payload: str) -> str:
    return f"event: {EVENT_DELTA}\ndata: {payload}\n\n"


def _turn_of(payload: str) -> int | None:
    try:
        turn = json.loads(payload)["turn"]
    except (ValueError, TypeError, KeyError):
        return None  # not a delta of ours: nothing to forward
    return turn if isinstance(turn, int) else None


class _Follower:
    """One open stream: where it is in the durable events, and which turns' deltas are stale."""

    def __init__(self, run_id: uuid.UUID, after: int, deltas: live.Subscription) -> None:
        self.run_id, self.after, self.deltas = run_id, after, deltas
        self.shown_turn = -1  # every event of the turns up to this one has been sent
        self.idle_since = time.monotonic()

    def frames(self) -> Iterator[str]:
        knobs = hango()
        deadline = time.monotonic() + knobs.event_stream_max_seconds
        while time.monotonic() < deadline:
            # Read the status first: a finished run's last events were committed with its
            # status, and a turn read here is wholly in the events read next.
            status, turn = (Run.objects.filter(pk=self.run_id).values_list("status", "turn")
                            .first() or (None, 0))
            events = selectors.run_events_after(run_id=self.run_id, after=self.after,
                                                limit=BATCH)
            # A turn's deltas were published before it committed: those still unread go
            # before its events, a later turn's after them.
            early, later = self.drained(turn)
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
            if status not in ACTIVE_RUN_STATUSES:
                return
            if time.monotonic() - self.idle_since > KEEP_ALIVE_SECONDS:
                yield ": keep-alive\n\n"
                self.idle_since = time.monotonic()
            yield from self.live(knobs.event_poll_seconds)

    def live(self, seconds: float) -> Iterator[str]:
        """The deltas that arrive within ``seconds`` (the wait until the next poll)."""
        until = time.monotonic() + seconds
        while (left := until - time.monotonic()) > 0:
            payload = self.deltas.get(left)
            if payload is not None and self.fresh(payload) is not None:
                self.idle_since = time.monotonic()
                yield delta_frame(payload)

    def drained(self, turn: int) -> tuple[list[str], list[str]]:
        """The deltas already received, split: of turns up to ``turn``, and of later ones."""
        early: list[str] = []
        later: list[str] = []
        while (payload := self.deltas.get(0)) is not None:
            if (of := self.fresh(payload)) is not None:
                (early if of <= turn else later).append(delta_frame(payload))
        return early, later

    def fresh(self, payload: str) -> int | None:
        """The turn of a delta to forward; None for a stale one (its message was sent)."""
        turn = _turn_of(payload)
        return turn if turn is not None and turn > self.shown_turn else None


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
