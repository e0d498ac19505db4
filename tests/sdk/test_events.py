"""The event iterator (hango_client/_sync.py, _core.py): frames unwrapped into events, a broken
stream reopened with ``Last-Event-ID`` and no event repeated. The real stream, cut for real,
is tests/scenarios/test_sdk.py's; here a MockTransport breaks it on cue."""

from __future__ import annotations

import json

import httpx
import pytest
from hango_client import Client, NotAnApi, RetryPolicy


def frame(seq: int | None, type_: str, data: dict) -> str:
    if seq is None:
        return f"event: {type_}\ndata: {json.dumps(data)}\n\n"
    event = {"seq": seq, "type": type_, "data": data, "created_at": "2026-12-07T00:00:00Z"}
    return f"id: {seq}\nevent: {type_}\ndata: {json.dumps(event)}\n\n"


class BrokenStream(httpx.SyncByteStream):
    """Some frames, then a dropped connection."""

    def __init__(self, frames: list[str]) -> None:
        self.frames = frames

    def __iter__(self):
        for text in self.frames:
            yield text.encode()
        raise httpx.ReadError("connection reset")


def test_events_are_unwrapped_and_resumed_after_the_last_seq():
    asked: list[str | None] = []

    def api(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/runs/r1":
            return httpx.Response(200, json={"id": "r1", "status": "completed"})
        asked.append(request.headers.get("Last-Event-ID"))
        assert request.url.params["after"] == asked[-1]  # the cursor in the query too
        headers = {"content-type": "text/event-stream"}
        if len(asked) == 1:
            return httpx.Response(200, headers=headers, stream=BrokenStream([
                ": keep-alive\n\n", frame(1, "run.status", {"status": "running"}),
                frame(None, "message.delta", {"run": "r1", "turn": 1, "index": 0,
                                              "text": "Hel"}),
                frame(2, "message.created", {"role": "assistant"})]))
        # A server replays from Last-Event-ID; seq 2 again is dropped all the same.
        return httpx.Response(200, headers=headers, text=(
            frame(2, "message.created", {"role": "assistant"})
            + frame(3, "run.status", {"status": "completed"})))

    client = Client("http://api.test", "k", retry=RetryPolicy(backoff=0),
                    transport=httpx.MockTransport(api))
    stream = client.runs.events("r1")
    events = list(stream)
    assert stream.after == 3 and stream.run == {"id": "r1", "status": "completed"}
    assert [(e.type, e.seq) for e in events] == [
        ("run.status", 1), ("message.delta", None), ("message.created", 2),
        ("run.status", 3)]
    assert events[0].data == {"status": "running"} and events[0].id == "1"
    assert events[1].data["text"] == "Hel" and events[1].id is None
    assert asked == ["0", "2"]


def test_a_stream_refused_with_503_is_opened_again_and_a_non_stream_is_not_hango():
    answers = [httpx.Response(503, json={"error": {"code": "database_unavailable",
                                                   "message": "Try again.", "detail": None}}),
               httpx.Response(200, headers={"content-type": "text/event-stream"},
                              text=frame(1, "run.status", {"status": "completed"})),
               httpx.Response(200, json={"id": "r1", "status": "completed"})]
    client = Client("http://api.test", "k", retry=RetryPolicy(backoff=0),
                    transport=httpx.MockTransport(lambda request: answers.pop(0)))
    assert [e.seq for e in client.runs.events("r1")] == [1]

    html = httpx.MockTransport(lambda request: httpx.Response(200, text="<html>"))
    with pytest.raises(NotAnApi):
        list(Client("http://api.test", "k", transport=html).runs.events("r1"))


def test_leaving_a_stream_closes_it():
    closed = []

    class Endless(httpx.SyncByteStream):
        def __iter__(self):
            for seq in range(1, 1000):
                yield frame(seq, "run.status", {"status": "running"}).encode()

        def close(self) -> None:
            closed.append(True)

    client = Client("http://api.test", "k", transport=httpx.MockTransport(
        lambda request: httpx.Response(200, headers={"content-type": "text/event-stream"},
                                       stream=Endless())))
    with client.runs.events("r1", after=5) as stream:
        assert next(iter(stream)).seq == 6
    assert closed and stream.after == 6
