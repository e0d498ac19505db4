"""cli.follow: a run's events across reconnections, against a server replaying the event route's
wire format (durable events with ids, live deltas without), and its error frames."""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner
from httpx_sse import ServerSentEvent

from cli.client import ApiError, Client
from cli.follow import Follower, parse_frame
from cli.main import cli

RUN = "0b5f6a0e-8a4c-4f59-9d5e-5b0d3f3a1c11"
SESSION = "5d1a3c0e-1b2c-4d3e-8f4a-5b6c7d8e9f00"


def durable(at: int, kind: str, **data: Any) -> bytes:
    """A stored event's frame: ``id:`` its seq ``at``, its data the run event."""
    document = {"seq": at, "type": kind, "data": data, "created_at": "2026-01-01T00:00:00Z"}
    return f"id: {at}\nevent: {kind}\ndata: {json.dumps(document)}\n\n".encode()


def live_delta(text: str, index: int = 0, turn: int = 1) -> bytes:
    """A live delta's frame: no id, its data the bare delta (``index`` counts a model call's
    deltas from 0)."""
    payload = {"run": RUN, "turn": turn, "index": index, "text": text}
    return f"event: message.delta\ndata: {json.dumps(payload)}\n\n".encode()


def run_body(status: str) -> dict[str, Any]:
    return {"id": RUN, "session": SESSION, "agent": "a", "status": status, "turn": 1,
            "todos": [], "pending_approvals": [], "error": None,
            "usage": {"input_tokens": 3, "output_tokens": 2}}


def test_frames_become_events():
    event = parse_frame(ServerSentEvent(event="run.status", id="4", data=json.dumps(
        {"seq": 4, "type": "run.status", "data": {"status": "running"}})))
    assert (event.type, event.seq, event.data) == ("run.status", 4, {"status": "running"})
    delta = parse_frame(ServerSentEvent(event="message.delta", data='{"turn": 1, "text": "Hi"}'))
    assert (delta.type, delta.seq, delta.data) == ("message.delta", None, {"turn": 1,
                                                                           "text": "Hi"})
    assert delta.raw == {"type": "message.delta", "data": {"turn": 1, "text": "Hi"}}
    # A live event sent in the durable shape, without a seq, is live all the same.
    wrapped = parse_frame(ServerSentEvent(event="message.delta", data=json.dumps(
        {"type": "message.delta", "data": {"text": "x"}})))
    assert (wrapped.seq, wrapped.data) == (None, {"text": "x"})
    for empty in ("", "not json", "[1]"):
        assert parse_frame(ServerSentEvent(event="x", data=empty)) is None


def test_a_stream_that_ends_early_is_followed_on_from_the_last_seq(replay):
    replay.reply_sse(durable(1, "run.status", status="running") + b": keep-alive\n\n"
                     + live_delta("Hel") + durable(2, "todos.updated", todos=[]))
    replay.reply(200, run_body("running"))  # the stream ended, the run did not
    replay.reply_sse(durable(2, "todos.updated", todos=[]) + live_delta("lo", 1)
                     + durable(3, "run.status", status="completed"))
    replay.reply(200, run_body("completed"))
    follower = Follower(Client(url=replay.url, key="hk_test"), RUN)
    events = [(e.type, e.seq) for e in follower.events()]
    assert events == [("run.status", 1), ("message.delta", None), ("todos.updated", 2),
                      ("message.delta", None), ("run.status", 3)]
    assert follower.after == 3 and follower.run["status"] == "completed"
    first, _, second, _ = replay.requests
    assert first.path == f"/v1/runs/{RUN}/events?after=0"
    assert second.path == f"/v1/runs/{RUN}/events?after=2"
    assert first.headers["accept"] == "text/event-stream"
    assert first.headers["authorization"] == "Bearer hk_test"


def test_an_error_frame_is_the_api_error(replay):
    error = {"error": {"code": "not_found", "message": "Run not found.", "detail": {}}}
    replay.reply(404, f"event: error\ndata: {json.dumps(error)}\n\n".encode(),
                 headers={"content-type": "text/event-stream; charset=utf-8"})
    with pytest.raises(ApiError) as caught:
        list(Follower(Client(url=replay.url, key="hk_test"), RUN).events())
    assert (caught.value.status, caught.value.code) == (404, "not_found")


def test_hango_follow_prints_streamed_text_once(replay):
    content = [{"type": "text", "text": "Hello there."}]
    replay.reply(200, run_body("running"))
    replay.reply_sse(live_delta("Hello ") + live_delta("there", 1)
                     + durable(1, "message.created", id="m1", seq=2, role="assistant",
                               content=content)
                     + durable(2, "run.status", status="completed", turn=1))
    replay.reply(200, run_body("completed"))
    env = {"HANGO_API_URL": replay.url, "HANGO_API_KEY": "hk_test"}
    result = CliRunner().invoke(cli, ["follow", RUN], env=env)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == ["Hello there.",
                                          "(completed in 1 turns; 3 input, 2 output tokens)"]
    # Nothing was read from the messages route: the event carried the content.
    assert [r.path.split("?")[0] for r in replay.requests] == [
        f"/v1/runs/{RUN}", f"/v1/runs/{RUN}/events", f"/v1/runs/{RUN}"]


def test_hango_follow_json_prints_every_event_as_a_line(replay):
    replay.reply(200, run_body("running"))
    replay.reply_sse(live_delta("Hi") + durable(1, "run.status", status="failed", turn=1))
    replay.reply(200, {**run_body("failed"), "error": {"code": "provider_error",
                                                      "message": "Down."}})
    env = {"HANGO_API_URL": replay.url, "HANGO_API_KEY": "hk_test"}
    result = CliRunner().invoke(cli, ["follow", RUN, "--json"], env=env)
    assert result.exit_code == 1, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert lines[0] == {"type": "message.delta",
                        "data": {"run": RUN, "turn": 1, "index": 0, "text": "Hi"}}
    assert lines[1]["seq"] == 1 and lines[1]["data"]["status"] == "failed"
    assert len(lines) == 2


def test_a_paused_runs_history_is_read_from_the_json_pages_leaving_no_stream(replay):
    # A stream the client leaves would hold a synchronous server's worker until its next
    # keep-alive: a run that is not moving is read from the stored events instead.
    pending = [{"tool_use_id": "t1", "name": "word_count", "input": {"text": "a b"},
                "allowed_decisions": ["approve", "reject"]}]
    paused = {**run_body("awaiting_approval"), "pending_approvals": pending}
    events = [{"seq": 1, "type": "run.status", "data": {"status": "running"}},
              {"seq": 2, "type": "approval.requested", "data": {"pending": [
                  {"tool_use_id": "t1", "name": "word_count",
                   "allowed_decisions": ["approve", "reject"]}]}},
              {"seq": 3, "type": "run.status", "data": {"status": "awaiting_approval"}}]
    replay.reply(200, paused)
    replay.reply(200, {"results": events, "next_after": 3})
    replay.reply(200, paused)
    env = {"HANGO_API_URL": replay.url, "HANGO_API_KEY": "hk_test"}
    result = CliRunner().invoke(cli, ["follow", RUN, "--json"], env=env)
    assert result.exit_code == 3, result.output
    assert [json.loads(line)["seq"] for line in result.stdout.splitlines()] == [1, 2]
    assert "t1: word_count" in result.stderr
    assert [(r.path, r.headers.get("accept")) for r in replay.requests] == [
        (f"/v1/runs/{RUN}", "application/json"),
        (f"/v1/runs/{RUN}/events?after=0", "application/json"),
        (f"/v1/runs/{RUN}", "application/json")]
