"""Live tokens end to end: a real Celery worker runs the model (the scripted one, or an adapter
against a local server replaying its streaming wire format), its deltas go through the suite's
Redis, and followers of the run's event stream under real gunicorn see the answer being
written: the deltas of each turn join to the text of the message it stored, and each
message.created holds the content the messages route answers. A follower that reconnects with
Last-Event-ID misses no durable event."""

from __future__ import annotations

import time

import pytest

from tests.support import workers
from tests.support.api import started_run
from tests.support.replay import ReplayServer, wire
from tests.support.servers import GunicornProcess
from tests.support.sse import Follower, assert_turn_order, durable, follow, live_text, text_of

pytestmark = pytest.mark.slow

KEY = "test-key"


@pytest.fixture
def web(broker, tmp_path, transactional_db):
    """gunicorn on the test database, following deltas through the suite's Redis."""
    server = GunicornProcess(tmp_path, database_url=workers.test_database_url(), threads=4,
                             env={"HANGO_LIVE_REDIS_URL": broker,
                                  "HANGO_EVENT_POLL_SECONDS": "0.1"})
    yield server
    server.stop()


@pytest.fixture
def replays():
    servers = {"anthropic": ReplayServer(), "openai": ReplayServer()}
    yield servers
    for server in servers.values():
        server.close()


def assert_followed(caller, session_id: str, run_id: str, frames) -> dict[int, str]:
    """Every durable event once, in order; each turn's deltas joined equal the text of the
    assistant message of that turn; message.created content as the messages route has it.
    The live text per turn."""
    events = durable(frames)
    stored = caller.client.get(f"/v1/runs/{run_id}/events").json()["results"]
    assert [f.data for f in events] == stored
    assert [int(f.id) for f in events] == [e["seq"] for e in stored]
    assert stored[-1]["data"]["status"] == "completed", stored[-1]
    messages = caller.client.get(f"/v1/sessions/{session_id}/messages").json()["results"]
    by_id = {m["id"]: m for m in messages}
    created = [e["data"] for e in stored if e["type"] == "message.created"]
    assert created and all(c["content"] == by_id[c["id"]]["content"] for c in created)
    assistant = [m for m in messages if m["role"] == "assistant" and m["run"] == run_id]
    written = {turn: text_of(m["content"]) for turn, m in enumerate(assistant, 1)
               if text_of(m["content"])}
    live = live_text(frames)
    assert live == written, (live, written)
    assert_turn_order(frames)
    return live


def test_followers_see_each_model_write_its_answer(alice, make_agent, web, replays,
                                                   start_worker):
    anthropic, openai = replays["anthropic"], replays["openai"]
    anthropic.reply_sse(wire("anthropic_stream_tool_use.sse"))
    # The answers written at a model's pace: a turn is not written and committed whole
    # between the follower's seeing its first delta and its poll (it would get no deltas).
    anthropic.reply_sse(wire("anthropic_stream_text.sse"), pace=0.02)
    openai.reply_sse(wire("openai_stream_tool_calls.sse"))
    openai.reply_sse(wire("openai_stream_text.sse"), pace=0.02)
    runs = {model: started_run(alice, make_agent, model, "How many words in 'one two three'?")
            for model in ("scripted:demo", "anthropic:claude-sonnet-4-6", "openai:gpt-4o-mini")}
    followers = {model: Follower(web.url, run_id, alice.key)
                 for model, (_, run_id) in runs.items()}
    for follower in followers.values():
        follower.start()
    for follower in followers.values():
        follower.wait_started()  # subscribed: now the runs may start
    # The scripted demo at a pace too (20 ms a word): instant, its last turn could be written
    # and committed within one of the follower's polls, and so send no deltas (documented).
    start_worker(ANTHROPIC_BASE_URL=anthropic.url, ANTHROPIC_API_KEY=KEY,
                 OPENAI_BASE_URL=openai.url, OPENAI_API_KEY=KEY, HANGO_PROVIDER_MAX_RETRIES=0,
                 HANGO_SCRIPTED_WORD_DELAY_MS=20)

    live = {model: assert_followed(alice, *runs[model], followers[model].frames())
            for model in runs}
    assert live["anthropic:claude-sonnet-4-6"] == live["openai:gpt-4o-mini"] == {
        1: "Let me count them.", 2: "There are three words in it."}
    demo = live["scripted:demo"]
    assert sorted(demo) == [1, 5] and demo[5].startswith('You said: "How many words')
    # The adapters asked for streams (and the second call carried the tool's result).
    assert [r.body.get("stream") for r in anthropic.requests] == [True, True]
    assert [r.body.get("stream") for r in openai.requests] == [True, True]
    assert openai.requests[1].body["messages"][-1] == {
        "role": "tool", "tool_call_id": "call_DdmO9pD3xa9XTPNJ32zg2hcA", "content": "3"}
    # The demo's deltas came word by word.
    frames = followers["scripted:demo"].frames()
    assert len([f for f in frames if f.event == "message.delta"]) > 10


def test_a_follower_that_reconnects_with_last_event_id_misses_no_durable_event(
        alice, make_agent, web, start_worker):
    session_id, run_id = started_run(alice, make_agent, "scripted:workload-12", "Go.")
    first = Follower(web.url, run_id, alice.key,
                     stop=lambda frame: frame.id is not None and int(frame.id) >= 6)
    first.start()
    first.wait_started()
    start_worker(HANGO_SCRIPTED_DELAY_MS=60, HANGO_SCRIPTED_WORD_DELAY_MS=20)
    before = first.frames()  # it disconnected after the run's sixth event
    last_id = [f.id for f in before if f.id is not None][-1]
    time.sleep(0.3)  # events go on meanwhile
    after = follow(web.url, run_id, alice.key, last_event_id=last_id)

    ids = [int(f.id) for f in durable(before) + durable(after) if f.id is not None]
    stored = alice.client.get(f"/v1/runs/{run_id}/events").json()["results"]
    assert ids == [e["seq"] for e in stored] and ids == list(range(1, len(stored) + 1))
    assert int(last_id) < len(stored) - 10  # the second stream really resumed mid-run
    # After the reconnect the deltas flow again: the answer, written word by word.
    assert live_text(after) == {13: "All 12 steps done."}
    assert len([f for f in after if f.event == "message.delta"]) == 4
    assert_followed(alice, session_id, run_id, before + after)


def test_a_run_written_at_a_person_s_pace_keeps_its_turns_in_order(
        alice, make_agent, broker, tmp_path, transactional_db, start_worker):
    """The CLI's `send --follow` of the demo: turn 1 writes, turns 2-4 call tools, turn 5
    answers, word by word, between the default polls: no turn's deltas before the events of
    the turns before it."""
    server = GunicornProcess(tmp_path, database_url=workers.test_database_url(), threads=4,
                             env={"HANGO_LIVE_REDIS_URL": broker})
    try:
        session_id, run_id = started_run(alice, make_agent, "scripted:demo", "Count 'one two'.")
        follower = Follower(server.url, run_id, alice.key)
        follower.start()
        follower.wait_started()
        start_worker(HANGO_SCRIPTED_WORD_DELAY_MS=30)
        frames = follower.frames()
    finally:
        server.stop()
    live = assert_followed(alice, session_id, run_id, frames)
    assert sorted(live) == [1, 5]
