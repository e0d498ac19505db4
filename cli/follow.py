"""Following a run: its events from the SSE route, as one iterator across reconnections.

The route streams the run's durable events (``id:`` = their seq) and, while the model writes,
live ``message.delta`` events that have no seq and are never stored. The SDK's event stream
(``hango_client``) follows it: when the stream ends while the run is still active (the server's
longest stream, HANGO_EVENT_STREAM_MAX_SECONDS) or the connection breaks, it reconnects after the
last seq it saw, so no durable event is missed or repeated.

A run that is not moving (finished, or parked for approval or for its caller's client tool
results) has all its events stored: they are
read from the route's JSON pages instead. A stream a client leaves holds a synchronous server's
worker until the server next writes to it (its keep-alive, after 15 s without events); reading a
paused run's history that way leaves none behind.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

import hango_client
from hango_client import parse_event
from httpx_sse import ServerSentEvent

from cli.client import Client, path_id

ACTIVE_STATUSES = frozenset({"pending", "queued", "running", "awaiting_approval",
                             "requires_action"})
# A run whose events are still to come.
MOVING_STATUSES = frozenset({"pending", "queued", "running"})
DELTA = "message.delta"
MESSAGE = "message.created"
STATUS = "run.status"
TODOS = "todos.updated"
TOOL_RESULT = "tool.result"
APPROVAL = "approval.requested"
CLIENT_RESULTS = "tool_results.requested"  # the run waits for its caller's client tool results



@dataclass(frozen=True, kw_only=True)
class Event:
    """One event of a run: ``raw`` is the document as the server sent it (what ``--json``
    prints); ``seq`` is None for a live-only event."""

    type: str
    data: dict[str, Any]
    seq: int | None
    raw: dict[str, Any]


def parse_frame(frame: ServerSentEvent) -> Event | None:
    """A stream frame as an Event; None for one that carries nothing to show (the SDK's
    unwrapping: a durable event's data is the run event, a live delta's its bare payload)."""
    event = parse_event(frame)
    return None if event is None else from_sdk(event)


def from_sdk(event: hango_client.Event) -> Event:
    """The SDK's event, with the document the server sent for it (what ``--json`` prints)."""
    raw: dict[str, Any] = {"type": event.type, "data": event.data}
    if event.seq is not None:
        raw = {"seq": event.seq, **raw, "created_at": event.created_at}
    return Event(type=event.type, data=event.data, seq=event.seq, raw=raw)


def stored_event(raw: dict[str, Any]) -> Event:
    """A run event document (``{seq, type, data, created_at}``) as an Event."""
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
        if self.run is not None and self.run["status"] not in MOVING_STATUSES:
            yield from self._stored()
            if self.read_run()["status"] not in ACTIVE_STATUSES:
                return
            # Moving again, or paused with the caller going on: wait on the stream.
        with self.client.events(self.run_id, after=self.after) as stream:
            for event in stream:
                if event.seq is not None:
                    self.after = event.seq
                yield from_sdk(event)
        self.run = stream.run

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
