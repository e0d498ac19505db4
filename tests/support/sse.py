"""Reading a run's event stream as a client does: frames parsed by the SSE rules, followed over
real HTTP (a gunicorn server) or from the test client's streaming response."""

from __future__ import annotations

import json
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
           timeout: float = 60) -> list[Frame]:
    """Follow ``run_id``'s stream until it ends, or until ``stop`` is true of a frame (then the
    client disconnects); every frame received, the last one included."""
    headers = {"Authorization": f"Bearer {key}", "Accept": "text/event-stream"}
    if last_event_id is not None:
        headers["Last-Event-ID"] = last_event_id
    got: list[Frame] = []
    with httpx.stream("GET", f"{base_url}/v1/runs/{run_id}/events", headers=headers,
                      timeout=timeout) as response:
        assert response.status_code == 200, response.read()
        for frame in frames_of(response.iter_lines()):
            got.append(frame)
            if stop(frame):
                break
    return got


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
