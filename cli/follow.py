"""Following a run: its events from the SSE route, as one iterator across reconnections.

The route streams the run's durable events (``id:`` = their seq) and, while the model writes,
live ``message.delta`` events that have no seq and are never stored. The stream ends when the run
finishes, or after the server's longest stream (HANGO_EVENT_STREAM_MAX_SECONDS): then, or when
the connection breaks, the follower asks for the run and, while it is still active, reconnects
after the last seq it saw, so no durable event is missed or repeated.

A run that is not moving (finished, or paused for approval) has all its events stored: they are
read from the route's JSON pages instead. A stream a client leaves holds a synchronous server's
worker until the server next writes to it (its keep-alive, after 15 s without events); reading a
paused run's history that way leaves none behind.
"""

from __future__ import annotations

import json
import time
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

from httpx_sse import ServerSentEvent

from cli.client import Client, StreamInterrupted, Unreachable, path_id

ACTIVE_STATUSES = frozenset({"pending", "queued", "running", "awaiting_approval"})
# A run whose events are still to come.
MOVING_STATUSES = frozenset({"pending", "queued", "running"})
DELTA = "message.delta"
MESSAGE = "message.created"
STATUS = "run.status"
TODOS = "todos.updated"
TOOL_RESULT = "tool.result"
APPROVAL = "approval.requested"

RECONNECTS = 5  # broken streams in a row before the follower gives up
_BACKOFF_SECONDS = (0.2, 0.5, 1.0, 2.0, 4.0)


@dataclass(frozen=True, kw_only=True)
class Event:
    """One event of a run: ``raw`` is the document as the server sent it (what ``--json``
    prints); ``seq`` is None for a live-only event."""

    type: str
    data: dict[str, Any]
    seq: int | None
    raw: dict[str, Any]


def parse_frame(frame: ServerSentEvent) -> Event | None:
    """A stream frame as an Event; None for one that carries nothing to show.

    A durable event's data is the run event (``{seq, type, data, created_at}``); a frame whose
    data is not such a document (a live delta may be sent as its bare payload) is taken as the
    data of an event of the frame's type."""
    if not frame.data:
        return None
    try:
        document = json.loads(frame.data)
    except ValueError:
        return None
    if not isinstance(document, dict):
        return None
    if isinstance(document.get("type"), str) and isinstance(document.get("data"), dict):
        return stored_event(document)
    return stored_event({"type": frame.event, "data": document})


def stored_event(raw: dict[str, Any]) -> Event:
    """A run event document (``{seq, type, data, created_at}``) as an Event.

    The seq is the document's: a stream frame's id is no guide, since an SSE parser keeps the
    last id it saw for every later frame (the spec's "last event ID"), live ones included."""
    seq = raw.get("seq")
    return Event(type=str(raw["type"]), data=raw["data"],
                 seq=seq if isinstance(seq, int) and not isinstance(seq, bool) else None, raw=raw)


class Follower:
    """The events of run ``run_id`` after seq ``after``; ``run`` is the run as last read (set
    when :meth:`events` ends)."""

    def __init__(self, client: Client, run_id: str, *, after: int = 0) -> None:
        self.client = client
        self.run_id = run_id
        self.after = after
        self.run: dict[str, Any] | None = None

    @property
    def path(self) -> str:
        return f"/v1/runs/{path_id(self.run_id)}"

    def read_run(self) -> dict[str, Any]:
        self.run = self.client.get(self.path)
        return self.run

    def events(self) -> Generator[Event, None, None]:
        """Every event until the run is no longer active. Break out of it at any point (to
        answer an approval, say) and call it again to go on from the last seq seen."""
        broken = 0
        while True:
            if self.run is not None and self.run["status"] not in MOVING_STATUSES:
                yield from self._stored()
                if self.read_run()["status"] not in ACTIVE_STATUSES:
                    return
                # Moving again, or paused with the caller going on: wait on the stream.
            received = False
            try:
                with self.client.sse(f"{self.path}/events", params={"after": self.after}) as frames:
                    for frame in frames:
                        event = parse_frame(frame)
                        if event is None:
                            continue
                        broken, received = 0, True
                        if event.seq is not None:
                            if event.seq <= self.after:  # already seen before a reconnection
                                continue
                            self.after = event.seq
                        yield event
            except (StreamInterrupted, Unreachable):  # a server restarting, say
                broken += 1
                if broken > RECONNECTS:
                    raise
                time.sleep(_BACKOFF_SECONDS[min(broken, len(_BACKOFF_SECONDS)) - 1])
                continue
            if self.read_run()["status"] not in ACTIVE_STATUSES:
                return
            if not received:  # an active run's stream that ended at once: do not spin
                time.sleep(_BACKOFF_SECONDS[1])

    def _stored(self) -> Generator[Event, None, None]:
        """The events stored after ``after``, from the route's JSON pages."""
        while True:
            page = self.client.get(f"{self.path}/events", params={"after": self.after})
            events = [stored_event(raw) for raw in page.get("results") or []]
            for event in events:
                if event.seq is not None and event.seq > self.after:
                    self.after = event.seq
                    yield event
            if not events:
                return
