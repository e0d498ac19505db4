"""Reading a run's event stream as a client does: frames parsed by the SSE rules, followed over
real HTTP (a gunicorn server) or from the test client's streaming response."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx


@dataclass(frozen=True)
class Frame:
    event: str
    data: Any  # the JSON of its data line
    id: str | None = None  # None: the frame had no id field


def frames_of(lines: Iterable[str]) -> Iterator[Frame]:
    """The frames of a stream's lines (comments skipped), each as soon as its blank line is."""
    fields: dict[str, str] = {}
    for line in lines:
        if not line:
            if "data" in fields:
                yield Frame(event=fields.get("event", "message"), data=json.loads(fields["data"]),
                            id=fields.get("id"))
            fields = {}
        elif not line.startswith(":"):
            name, _, value = line.partition(":")
            fields[name] = value.removeprefix(" ")


def chunks_to_lines(chunks: Iterable[bytes]) -> Iterator[str]:
    """Lines of a byte stream that may split anywhere (the test client's chunks)."""
    pending = ""
    for chunk in chunks:
        pending += chunk.decode()
        *lines, pending = pending.split("\n")
        yield from lines


def follow(base_url: str, run_id: str, key: str, *, last_event_id: str | None = None,
           stop: Callable[[Frame], bool] = lambda frame: False,
           started: threading.Event | None = None, timeout: float = 60) -> list[Frame]:
    """Follow ``run_id``'s stream until it ends, or until ``stop`` is true of a frame (then the
    client disconnects); every frame received, the last one included. ``started`` is set at
    the first frame: the stream has subscribed to the run's deltas by then."""
    headers = {"Authorization": f"Bearer {key}", "Accept": "text/event-stream"}
    if last_event_id is not None:
        headers["Last-Event-ID"] = last_event_id
    got: list[Frame] = []
    with httpx.stream("GET", f"{base_url}/v1/runs/{run_id}/events", headers=headers,
                      timeout=timeout) as response:
        assert response.status_code == 200, response.read()
        for frame in frames_of(response.iter_lines()):
            got.append(frame)
            if started is not None:
                started.set()
            if stop(frame):
                break
    return got


class Follower(threading.Thread):
    """:func:`follow` on a thread of its own; :meth:`frames` waits for its end."""

    def __init__(self, base_url: str, run_id: str, key: str, **options: Any) -> None:
        super().__init__(daemon=True)
        self.started = threading.Event()
        self.got: list[Frame] | None = None
        self.error: BaseException | None = None
        self._call = (base_url, run_id, key, options)

    def run(self) -> None:
        base_url, run_id, key, options = self._call
        try:
            self.got = follow(base_url, run_id, key, started=self.started, **options)
        except BaseException as exc:  # handed to the test by frames()
            self.error = exc
            self.started.set()

    def wait_started(self, timeout: float = 30) -> None:
        assert self.started.wait(timeout), "the stream sent nothing"
        if self.error is not None:
            raise self.error

    def frames(self, timeout: float = 60) -> list[Frame]:
        self.join(timeout)
        if self.error is not None:
            raise self.error
        assert self.got is not None, "the stream did not end"
        return self.got


def durable(frames: Iterable[Frame]) -> list[Frame]:
    return [f for f in frames if f.event != "message.delta"]


def live_text(frames: Iterable[Frame]) -> dict[int, str]:
    """The deltas' text joined per turn, in the order received."""
    texts: dict[int, str] = {}
    for f in frames:
        if f.event == "message.delta":
            texts[f.data["turn"]] = texts.get(f.data["turn"], "") + f.data["text"]
    return texts


def text_of(content: list[dict]) -> str:
    """A stored message's text blocks joined, as its deltas join."""
    return "".join(b["text"] for b in content if b["type"] == "text")


def assert_turn_order(frames: Iterable[Frame]) -> None:
    """Each delta of turn t after every durable event of the turns before t, and before its
    turn's assistant ``message.created``. A durable event's turn: the number of assistant
    ``message.created`` events up to it (run.status events, which a claim writes between
    turns, are left out)."""
    frames = list(frames)
    turns: list[int | None] = []
    turn = 0
    for f in frames:
        if f.event == "message.delta" or f.event == "run.status":
            turns.append(None)
            continue
        if f.event == "message.created" and f.data["data"]["role"] == "assistant":
            turn += 1
        turns.append(turn)
    for i, f in enumerate(frames):
        if f.event != "message.delta":
            continue
        t = f.data["turn"]
        late = [(j, frames[j].event) for j in range(i + 1, len(frames))
                if turns[j] is not None and turns[j] < t]  # type: ignore[operator]
        assert not late, f"delta #{i} of turn {t} came before events of earlier turns: {late}"
        own = [j for j in range(i) if turns[j] == t]
        assert not own, f"delta #{i} of turn {t} came after its turn's events {own}"
