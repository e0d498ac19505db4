"""A stream follows its run's channel in order: each turn's deltas, then its events when the
turn's marker comes (one read), a lost marker made up by a later delta or the poll, and a stream
opened mid-call starting with the call's deltas so far (in this process)."""

from __future__ import annotations

import time

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from runs.live import relay
from runs.models import Message
from tests.support.sse import (
    Frame,
    assert_turn_order,
    durable,
    live_text,
    text_of,
)
from tests.support.streams import (
    cancel,
    commit_turn,
    delta,
    end,
    execute_in_thread,
    later,
    open_stream,
    stream_reads,
)

# The stream's poll ten minutes away and its end two: events that come, come at a marker (or a
# later delta), and a stream that waited for the poll would end without them.
MARKERS_ONLY = {"event_live_poll_seconds": 600, "event_stream_max_seconds": 120}


def test_a_turn_s_events_follow_its_deltas_at_its_marker(alice, marked, hango_settings):
    hango_settings(**MARKERS_ONLY)
    run_id = marked.pk
    frames = open_stream(alice, run_id)
    assert next(frames).event == "run.status"
    delta(run_id, 1, 0, "live ")
    assert next(frames) == Frame(event="message.delta", data={
        "run": str(run_id), "turn": 1, "index": 0, "text": "live "})
    # The rest of turn 1's deltas, its commit, turn 2's first delta: in the channel's order,
    # the turn's events sent as its marker comes, not at the next poll (ten minutes away).
    later(0.3, lambda: delta(run_id, 1, 1, "late"), lambda: end(run_id, 1, 2),
          lambda: commit_turn(run_id, 1), lambda: delta(run_id, 2, 0, "next"))
    got = [next(frames) for _ in range(3)]
    assert [(f.event, f.id, f.data.get("text")) for f in got] == [
        ("message.delta", None, "late"), ("run.status", "2", None),
        ("message.delta", None, "next")]
    # A delta of a turn whose events were sent is dropped.
    delta(run_id, 1, 2, "stale")
    delta(run_id, 2, 1, "more")
    assert next(frames).data["text"] == "more"
    cancel(run_id)
    assert [f.data["data"]["status"] for f in frames] == ["cancelled"]  # then the stream ends


def test_a_turn_s_events_do_not_wait_for_the_end_of_its_call(alice, marked, hango_settings):
    # The worker's call stopped mid-stream (or its end never came): the commit's marker, after
    # every delta the turn published, is all the stream waits for.
    hango_settings(**MARKERS_ONLY)
    run_id = marked.pk
    frames = open_stream(alice, run_id)
    assert next(frames).event == "run.status"
    delta(run_id, 1, 0, "cut short")
    assert next(frames).event == "message.delta"
    commit_turn(run_id, 1)
    assert next(frames).id == "2"


def test_a_marker_of_events_already_sent_reads_nothing(alice, marked):
    run_id = marked.pk
    frames = open_stream(alice, run_id)
    assert next(frames).event == "run.status"
    commit_turn(run_id, 1)
    assert next(frames).id == "2"
    # A later time slice's claim marks the run as it is: nothing new to read.
    relay.events_added(run_id, turn=1, seq=2)
    delta(run_id, 2, 0, "next")
    with CaptureQueriesContext(connection) as queries:
        assert next(frames).data["text"] == "next"
    assert stream_reads(queries) == 0
    cancel(run_id)
    assert [f.data["data"]["status"] for f in frames] == ["cancelled"]


@pytest.mark.postgresql(reason="counts the stream's prepared read")
def test_a_later_turn_s_deltas_come_after_the_events_of_the_turns_before(alice, marked):
    # Turns 2-4 commit (tools only, no deltas) and turn 5 writes, all before the stream reads.
    run_id = marked.pk
    frames = open_stream(alice, run_id)
    assert next(frames).event == "run.status"
    delta(run_id, 1, 0, "first")
    end(run_id, 1, 1)
    assert next(frames).data["text"] == "first"
    for turn in (1, 2, 3, 4):
        commit_turn(run_id, turn)
    delta(run_id, 5, 0, "answer")
    with CaptureQueriesContext(connection) as queries:
        got = [next(frames) for _ in range(5)]
    assert [(f.event, f.data.get("text") or f.data["data"]["turn"]) for f in got] == [
        ("run.status", 1), ("run.status", 2), ("run.status", 3), ("run.status", 4),
        ("message.delta", "answer")]
    # One read at turn 1's marker found every turn committed: the others' markers read nothing.
    assert stream_reads(queries) == 1
    end(run_id, 5, 1)
    cancel(run_id)
    assert [f.data["data"]["status"] for f in frames] == ["cancelled"]


def test_a_delta_of_a_turn_committed_with_earlier_ones_is_not_sent_after_them(alice, marked):
    # Turn 2's deltas come after turns 1 and 2 are committed (their publisher was late, or not
    # the committer), before the stream reads: placed after turn 2's events, they are dropped.
    run_id = marked.pk
    frames = open_stream(alice, run_id)
    assert next(frames).event == "run.status"
    commit_turn(run_id, 1)
    commit_turn(run_id, 2)
    delta(run_id, 2, 0, "too late")
    end(run_id, 2, 1)
    delta(run_id, 3, 0, "next")
    got = [next(frames) for _ in range(3)]
    assert [(f.event, f.data.get("text") or f.data["data"]["turn"]) for f in got] == [
        ("run.status", 1), ("run.status", 2), ("message.delta", "next")]
    end(run_id, 3, 1)
    cancel(run_id)
    assert [f.data["data"]["status"] for f in frames] == ["cancelled"]


def test_a_delta_after_lost_markers_waits_for_the_events_of_the_turns_before(
        alice, marked, hango_settings):
    # Turns 1-2 commit and their markers are lost (a publisher that failed drops what it sends
    # for a while): turn 3's first delta says they are committed, and the stream reads them,
    # not at the next poll (ten minutes away).
    hango_settings(**MARKERS_ONLY)
    run_id = marked.pk
    frames = open_stream(alice, run_id)
    assert next(frames).event == "run.status"
    commit_turn(run_id, 1, marked=False)
    commit_turn(run_id, 2, marked=False)
    delta(run_id, 3, 0, "answer")
    got = [next(frames) for _ in range(3)]
    assert [(f.event, f.data.get("text") or f.data["data"]["turn"]) for f in got] == [
        ("run.status", 1), ("run.status", 2), ("message.delta", "answer")]
    cancel(run_id)
    assert [f.data["data"]["status"] for f in frames] == ["cancelled"]


def test_a_lost_marker_s_events_come_at_the_next_poll(alice, marked, hango_settings):
    # Read at the poll, which comes however late; a stream that waited for a marker would end
    # (two minutes on) without the turn's events.
    hango_settings(event_live_poll_seconds=0.5, event_stream_max_seconds=120)
    run_id = marked.pk
    frames = open_stream(alice, run_id)
    assert next(frames).event == "run.status"
    started = time.monotonic()
    commit_turn(run_id, 1, marked=False)
    assert next(frames).id == "2"
    assert time.monotonic() - started >= 0.4  # it waited for the poll: a lower bound
    cancel(run_id)
    assert [f.data["data"]["status"] for f in frames] == ["cancelled"]


def test_a_run_streamed_word_by_word_keeps_every_turn_s_deltas_in_their_place(
        alice, waiting_run, in_process, hango_settings):
    # The CLI's case: the scripted run's turns 2-4 call tools, turn 5 answers, at the
    # quickstart's pace, followed with the default poll interval.
    hango_settings(scripted_word_delay_ms=30, event_poll_seconds=0.5)
    frames = open_stream(alice, waiting_run.pk)
    first = next(frames)
    thread = execute_in_thread(waiting_run.pk)
    got = [first, *frames]
    thread.join()
    assert durable(got)[-1].data["data"]["status"] == "completed"
    assert_turn_order(got)
    stored = Message.objects.filter(run=waiting_run, role="assistant").order_by("seq")
    expected = {turn: text_of(m.content) for turn, m in enumerate(stored, 1) if text_of(m.content)}
    assert live_text(got) == expected


def test_a_stream_opened_mid_call_starts_with_the_call_s_deltas_so_far(
        alice, waiting_run, in_process, hango_settings):
    # The quickstart's `send --follow`: the run's model starts writing on a thread of this
    # process before the follower's stream is open.
    hango_settings(event_stream_max_seconds=5)  # a stream short of frames ends soon
    run_id = waiting_run.pk
    delta(run_id, 1, 0, "Let ")
    delta(run_id, 1, 1, "me ")
    frames = open_stream(alice, run_id)
    assert next(frames).event == "run.status"
    delta(run_id, 1, 2, "plan.")
    end(run_id, 1, 3)
    commit_turn(run_id, 1)
    got = [next(frames) for _ in range(4)]
    assert [(f.event, f.data.get("index"), f.data.get("text")) for f in got[:3]] == [
        ("message.delta", 0, "Let "), ("message.delta", 1, "me "), ("message.delta", 2, "plan.")]
    assert got[3].id == "2"
    # A call that has ended leaves nothing for the streams that open later.
    subscription, missed = relay.follow(run_id)
    subscription.close()
    assert missed == []


def test_a_stream_that_missed_a_call_s_first_deltas_sends_none_of_the_turn_s(
        alice, waiting_run, in_process, hango_settings):
    # A worker's deltas through Redis are published, not kept: a stream that subscribes after
    # the first one cannot send the turn's text from its start, so it sends none of it (the
    # turn's message.created holds it whole). Published here as a worker publishes them.
    hango_settings(event_stream_max_seconds=5)
    run_id = waiting_run.pk
    through_redis = relay.RunDeltas(run_id, relay.LOCAL)
    through_redis.delta(1, 0, "Let ")
    frames = open_stream(alice, run_id)
    assert next(frames).event == "run.status"
    through_redis.delta(1, 1, "me ")
    through_redis.delta(1, 2, "plan.")
    through_redis.end(1, 3)
    commit_turn(run_id, 1)
    assert next(frames).id == "2"
    # The next call is followed from its start: sent, each delta once.
    for index, word in enumerate(["It ", "has ", "3."]):
        through_redis.delta(2, index, word)
        if index == 1:
            through_redis.delta(2, index, word)  # delivered twice: sent once
    assert [next(frames).data["text"] for _ in range(3)] == ["It ", "has ", "3."]
    through_redis.delta(2, 4, "lost one")  # a gap: the rest of the turn comes whole
    through_redis.end(2, 5)
    commit_turn(run_id, 2)
    assert next(frames).id == "3"
