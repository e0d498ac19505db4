"""runs.streaming and the events route: durable events with their messages' content, live deltas
between them (in this process: no Redis, as in the quickstart), stale deltas dropped."""

from __future__ import annotations

import json
import threading
import time
import uuid

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from runs import live, selectors, serializers, streaming
from runs.events import append_events, status_event
from runs.models import Message, Run, RunEvent, Session
from runs.services import message_post
from runs.worker import execute_run
from tests.support.sse import (
    Frame,
    assert_turn_order,
    chunks_to_lines,
    durable,
    frames_of,
    live_text,
    text_of,
)

POLL = 0.05


@pytest.fixture
def in_process(broker, hango_settings, transactional_db):
    """Deltas through this process (the quickstart's way); runs are sent to the suite's Redis,
    where no worker takes them: each test executes its run itself."""
    hango_settings(live_redis_url="", event_poll_seconds=POLL)


@pytest.fixture
def waiting_run(alice, make_session, in_process) -> Run:
    """A queued run nobody takes (its task waits in Redis): the test executes it."""
    session = make_session(alice)
    _, run = message_post(session=Session.objects.get(pk=session["id"]), content="hi there")
    return run


def open_stream(caller, run_id, **headers):
    response = caller.client.get(f"/v1/runs/{run_id}/events", HTTP_ACCEPT="text/event-stream",
                                 **headers)
    assert response.status_code == 200
    return frames_of(chunks_to_lines(response.streaming_content))


def execute_in_thread(run_id) -> threading.Thread:
    def work() -> None:
        try:
            execute_run(str(run_id))
        finally:
            connection.close()  # this thread's own

    thread = threading.Thread(target=work)
    thread.start()
    return thread


def messages_of(caller, session_id) -> dict[str, dict]:
    listed = caller.client.get(f"/v1/sessions/{session_id}/messages?limit=200").json()
    return {m["id"]: m for m in listed["results"]}


def test_a_follower_in_this_process_gets_every_word_and_every_event(alice, waiting_run,
                                                                     in_process, hango_settings):
    # The scripted demo at a pace (20 ms a word): instant, its last turn could be written and
    # committed within one of the stream's polls, and so send no deltas (documented).
    hango_settings(scripted_word_delay_ms=20)
    frames = open_stream(alice, waiting_run.pk)
    first = next(frames)  # the stream has subscribed before it sent this
    assert (first.event, first.data["data"]["status"]) == ("run.status", "queued")
    thread = execute_in_thread(waiting_run.pk)
    got = [first, *frames]
    thread.join()

    events = durable(got)
    assert [int(f.id or 0) for f in events] == list(range(1, len(events) + 1))
    assert events[-1].data["data"]["status"] == "completed"
    deltas = [f for f in got if f.event == "message.delta"]
    assert deltas and all(f.id is None for f in deltas)
    assert {f.data["run"] for f in deltas} == {str(waiting_run.pk)}
    # Each turn's deltas join to the text of the assistant message it stored.
    stored = Message.objects.filter(run=waiting_run, role="assistant").order_by("seq")
    expected = {turn: text_of(m.content) for turn, m in enumerate(stored, 1) if text_of(m.content)}
    assert live_text(got) == expected and len(expected) == 2
    # ... and they come before that message's event.
    created = [i for i, f in enumerate(got) if f.event == "message.created"
               and f.data["data"]["role"] == "assistant"]
    for turn in expected:
        last_delta = max(i for i, f in enumerate(got)
                         if f.event == "message.delta" and f.data["turn"] == turn)
        assert last_delta < created[turn - 1]
    # message.created carries the content the messages route answers.
    listed = messages_of(alice, waiting_run.session_id)
    for f in events:
        if f.event == "message.created":
            data = f.data["data"]
            assert data["content"] == listed[data["id"]]["content"]
            assert set(data) == {"id", "seq", "role", "content"}


def test_stored_events_keep_only_the_message_s_seq_and_role(alice, waiting_run, in_process):
    execute_run(str(waiting_run.pk))
    stored = [e.data for e in waiting_run.events.filter(type="message.created")]
    assert stored and all(set(data) == {"seq", "role"} for data in stored)


def test_an_event_stored_with_its_message_s_id_reads_the_same(alice, waiting_run, in_process):
    execute_run(str(waiting_run.pk))
    listed = alice.client.get(f"/v1/runs/{waiting_run.pk}/events").json()["results"]
    event = waiting_run.events.filter(type="message.created").order_by("seq").first()
    event.data = {"id": listed_message_id(listed, event.seq), **event.data}  # as stored before
    event.save()
    assert alice.client.get(f"/v1/runs/{waiting_run.pk}/events").json()["results"] == listed


def listed_message_id(listed: list[dict], event_seq: int) -> str:
    return next(e["data"]["id"] for e in listed if e["seq"] == event_seq)


def test_the_events_page_adds_the_contents_in_one_query(alice, waiting_run, in_process):
    execute_run(str(waiting_run.pk))
    url = f"/v1/runs/{waiting_run.pk}/events"
    listed = messages_of(alice, waiting_run.session_id)  # (and the key's last use is written)
    with CaptureQueriesContext(connection) as whole:
        page = alice.client.get(url).json()["results"]
    created = [e for e in page if e["type"] == "message.created"]
    assert len(created) == 9  # 5 assistant messages and 4 of tool results
    for event in created:
        assert event["data"]["content"] == listed[event["data"]["id"]]["content"]
    with CaptureQueriesContext(connection) as without:  # the last page: run.status alone
        tail = alice.client.get(f"{url}?after={created[-1]['seq']}").json()["results"]
    assert [e["type"] for e in tail] == ["run.status"]
    # One more query for the contents, however many message events the page has.
    assert len(whole) == len(without) + 1
    messages = [q["sql"] for q in whole.captured_queries if '"messages"' in q["sql"]]
    assert len(messages) == 1 and " IN (" in messages[0]


def test_a_message_rewritten_after_its_event_shows_its_current_content(alice, waiting_run,
                                                                        in_process):
    execute_run(str(waiting_run.pk))
    message = Message.objects.filter(run=waiting_run, role="assistant").order_by("seq").first()
    assert message is not None
    edited = [{"type": "text", "text": "edited"}]
    Message.objects.filter(pk=message.pk).update(content=edited)
    page = alice.client.get(f"/v1/runs/{waiting_run.pk}/events").json()["results"]
    [event] = [e for e in page if e["type"] == "message.created"
               and e["data"]["id"] == str(message.pk)]
    assert event["data"]["content"] == edited


def delta(run_id, turn: int, index: int, text: str) -> None:
    """A delta as a run executing in this process publishes it."""
    sink = live.run_deltas(run_id)
    assert sink is not None
    sink.delta(turn, index, text)


def end(run_id, turn: int, count: int) -> None:
    sink = live.run_deltas(run_id)
    assert sink is not None
    sink.end(turn, count)


def commit_turn(run_id, turn: int, *, marked: bool = True) -> None:
    """What a turn's commit shows a stream: the run's turn counter, and an event; then, once
    committed, its marker on the run's channel (unless it is lost: ``marked`` false)."""
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run_id)
        run.turn = turn
        if marked:
            append_events(run, [status_event(run)])
        else:
            run.event_seq += 1
            RunEvent.objects.create(run=run, seq=run.event_seq, type="run.status",
                                    data={"status": run.status, "turn": turn})
        run.save()


def cancel(run_id) -> None:
    """The run ends, marked: its streams end at once."""
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run_id)
        run.status = "cancelled"
        append_events(run, [status_event(run)])
        run.save()


def later(seconds: float, *sends) -> threading.Timer:
    def send_all() -> None:
        try:
            for send in sends:
                send()
        finally:
            connection.close()  # the timer thread's own: a commit there took a pooled one

    timer = threading.Timer(seconds, send_all)
    timer.start()
    return timer


@pytest.fixture
def marked(waiting_run, hango_settings) -> Run:
    """The waiting run, its streams following a live channel, as in the quickstart (no broker:
    its runs execute in this process, which sees their markers), reading on a marker or every
    5 s should one be lost."""
    hango_settings(broker_url="", event_live_poll_seconds=5)
    return waiting_run


def stream_reads(queries: CaptureQueriesContext) -> int:
    return sum("hango_stream_read" in q["sql"] and "EXECUTE" in q["sql"]
               for q in queries.captured_queries)


def test_a_turn_s_events_follow_its_deltas_at_its_marker(alice, marked):
    run_id = marked.pk
    frames = open_stream(alice, run_id)
    assert next(frames).event == "run.status"
    delta(run_id, 1, 0, "live ")
    assert next(frames) == Frame(event="message.delta", data={
        "run": str(run_id), "turn": 1, "index": 0, "text": "live "})
    # The rest of turn 1's deltas, its commit, turn 2's first delta: in the channel's order,
    # the turn's events sent as its marker comes, not at the next poll (5 s away).
    started = time.monotonic()
    later(0.3, lambda: delta(run_id, 1, 1, "late"), lambda: end(run_id, 1, 2),
          lambda: commit_turn(run_id, 1), lambda: delta(run_id, 2, 0, "next"))
    got = [next(frames) for _ in range(3)]
    assert [(f.event, f.id, f.data.get("text")) for f in got] == [
        ("message.delta", None, "late"), ("run.status", "2", None),
        ("message.delta", None, "next")]
    assert time.monotonic() - started < 2
    # A delta of a turn whose events were sent is dropped.
    delta(run_id, 1, 2, "stale")
    delta(run_id, 2, 1, "more")
    assert next(frames).data["text"] == "more"
    cancel(run_id)
    assert [f.data["data"]["status"] for f in frames] == ["cancelled"]  # then the stream ends


def test_a_turn_s_events_do_not_wait_for_the_end_of_its_call(alice, marked):
    # The worker's call stopped mid-stream (or its end never came): the commit's marker, after
    # every delta the turn published, is all the stream waits for.
    run_id = marked.pk
    frames = open_stream(alice, run_id)
    assert next(frames).event == "run.status"
    delta(run_id, 1, 0, "cut short")
    assert next(frames).event == "message.delta"
    started = time.monotonic()
    commit_turn(run_id, 1)
    assert next(frames).id == "2"
    assert time.monotonic() - started < 0.8


def test_a_marker_of_events_already_sent_reads_nothing(alice, marked):
    run_id = marked.pk
    frames = open_stream(alice, run_id)
    assert next(frames).event == "run.status"
    commit_turn(run_id, 1)
    assert next(frames).id == "2"
    # A later time slice's claim marks the run as it is: nothing new to read.
    live.events_added(run_id, turn=1, seq=2)
    delta(run_id, 2, 0, "next")
    with CaptureQueriesContext(connection) as queries:
        assert next(frames).data["text"] == "next"
    assert stream_reads(queries) == 0
    cancel(run_id)
    assert [f.data["data"]["status"] for f in frames] == ["cancelled"]


def test_a_poll_that_finds_nothing_new_is_one_statement(alice, waiting_run, in_process):
    run_id = waiting_run.pk
    frames = open_stream(alice, run_id)
    assert next(frames).event == "run.status"
    later(0.5, lambda: delta(run_id, 1, 0, "word"))
    with CaptureQueriesContext(connection) as queries:
        assert next(frames).event == "message.delta"  # after some polls (every 50 ms)
    assert stream_reads(queries) >= 3
    assert all("hango_stream_read" in q["sql"] for q in queries.captured_queries)


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


def test_a_delta_after_lost_markers_waits_for_the_events_of_the_turns_before(alice, marked):
    # Turns 1-2 commit and their markers are lost (a publisher that failed drops what it sends
    # for a while): turn 3's first delta says they are committed, and the stream reads them.
    run_id = marked.pk
    frames = open_stream(alice, run_id)
    assert next(frames).event == "run.status"
    commit_turn(run_id, 1, marked=False)
    commit_turn(run_id, 2, marked=False)
    delta(run_id, 3, 0, "answer")
    started = time.monotonic()
    got = [next(frames) for _ in range(3)]
    assert [(f.event, f.data.get("text") or f.data["data"]["turn"]) for f in got] == [
        ("run.status", 1), ("run.status", 2), ("message.delta", "answer")]
    assert time.monotonic() - started < 2  # not at the next poll, 5 s away
    cancel(run_id)
    assert [f.data["data"]["status"] for f in frames] == ["cancelled"]


def test_a_lost_marker_s_events_come_at_the_next_poll(alice, marked, hango_settings):
    hango_settings(event_live_poll_seconds=0.5)
    run_id = marked.pk
    frames = open_stream(alice, run_id)
    assert next(frames).event == "run.status"
    started = time.monotonic()
    commit_turn(run_id, 1, marked=False)
    assert next(frames).id == "2"
    assert 0.4 <= time.monotonic() - started < 3
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
    subscription, missed = live.follow(run_id)
    subscription.close()
    assert missed == []


def test_a_stream_that_missed_a_call_s_first_deltas_sends_none_of_the_turn_s(
        alice, waiting_run, in_process, hango_settings):
    # A worker's deltas through Redis are published, not kept: a stream that subscribes after
    # the first one cannot send the turn's text from its start, so it sends none of it (the
    # turn's message.created holds it whole). Published here as a worker publishes them.
    hango_settings(event_stream_max_seconds=5)
    run_id = waiting_run.pk
    through_redis = live.RunDeltas(run_id, live.LOCAL)
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


def test_with_stream_deltas_off_runs_are_answered_whole_and_nothing_is_published(
        alice, waiting_run, in_process, hango_settings):
    hango_settings(stream_deltas=False)
    frames = open_stream(alice, waiting_run.pk)
    assert next(frames).event == "run.status"
    thread = execute_in_thread(waiting_run.pk)
    got = list(frames)
    thread.join()
    assert [f for f in got if f.event == "message.delta"] == []
    assert got[-1].data["data"]["status"] == "completed"
    # The stream never subscribed (another test's stream, not yet closed, may still be there).
    assert live.channel(waiting_run.pk) not in live.LOCAL._followers


def test_streams_woken_by_one_marker_share_one_read_and_a_later_one_reads_again():
    reads = streaming._SharedReads()
    release, calls = threading.Event(), []

    def read() -> list:
        calls.append(time.monotonic())
        made = f"read {len(calls)}"
        release.wait(2)
        return [made]

    key = ("a run", 3)
    woken = time.monotonic()
    got: list = []
    first = threading.Thread(target=lambda: got.append(reads.once(key, woken, read)))
    first.start()
    time.sleep(0.05)
    joiner = threading.Thread(target=lambda: got.append(reads.once(key, woken, read)))
    joiner.start()
    time.sleep(0.05)
    # A marker that came after the read under way began: that read may not see what it marks.
    late = threading.Thread(target=lambda: got.append(reads.once(key, time.monotonic(), read)))
    late.start()
    time.sleep(0.05)
    release.set()
    for thread in (first, joiner, late):
        thread.join(2)
    assert len(calls) == 2 and sorted(map(tuple, got)) == [("read 1",), ("read 1",), ("read 2",)]


def test_a_stream_reads_each_event_as_the_events_page_answers_it(alice, waiting_run,
                                                                  in_process):
    execute_run(str(waiting_run.pk))
    page = alice.client.get(f"/v1/runs/{waiting_run.pk}/events").json()["results"]
    # An event stored with its message's id (as events were once) reads the same too.
    old = waiting_run.events.filter(type="message.created").order_by("seq").first()
    old.data = {"id": listed_message_id(page, old.seq), **old.data}
    old.save()
    read = selectors.stream_read(run_id=waiting_run.pk, after=0, limit=500)
    assert [json.loads(json.dumps(serializers.event_output(e))) for e in read.events] == page
    assert (read.status, read.turn) == ("completed", 5)
    for after in (0, 3):
        slow = selectors.run_events_after(run_id=waiting_run.pk, after=after, limit=500)
        fast = selectors.stream_read(run_id=waiting_run.pk, after=after, limit=500).events
        assert [(e.seq, e.data) for e in fast] == [(e.seq, e.data) for e in slow]
        assert [serializers.event_output(e) for e in fast] == [
            serializers.RunEventOutput(e).data for e in slow]


def test_a_stream_s_read_without_new_events_tells_the_run_as_it_is(alice, waiting_run,
                                                                    in_process):
    execute_run(str(waiting_run.pk))
    last = waiting_run.events.order_by("-seq").first()
    assert selectors.stream_read(run_id=waiting_run.pk, after=last.seq, limit=500) == (
        [], "completed", 5)
    assert selectors.stream_read(run_id=uuid.uuid4(), after=0, limit=500) == ([], None, 0)
