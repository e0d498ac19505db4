"""runs.api.streaming and the events route: durable events with their messages' content, live deltas
between them (in this process: no Redis, as in the quickstart), stale deltas dropped."""

from __future__ import annotations

import json
import threading
import time
import uuid

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from runs.api import serializers, streaming
from runs.execution.worker import execute_run
from runs.intake import selectors
from runs.live import relay
from runs.models import Message
from tests.support.sse import (
    durable,
    live_text,
    text_of,
)
from tests.support.streams import (
    delta,
    execute_in_thread,
    later,
    messages_of,
    open_stream,
    stream_reads,
)


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
            # An answer adds its turn and its model call's cache figures.
            assert set(data) == {"id", "seq", "role", "content"} | (
                {"turn", "call"} if data["role"] == "assistant" else set())


def test_stored_events_keep_only_the_message_s_seq_and_role(alice, waiting_run, in_process):
    """And an answer's turn, which names its model call (its cache figures are read with it)."""
    execute_run(str(waiting_run.pk))
    stored = [e.data for e in waiting_run.events.filter(type="message.created")]
    assert stored and all(set(data) == {"seq", "role"} | (
        {"turn"} if data["role"] == "assistant" else set()) for data in stored)


def test_an_event_stored_with_its_message_s_id_reads_the_same(alice, waiting_run, in_process):
    execute_run(str(waiting_run.pk))
    listed = alice.client.get(f"/v1/runs/{waiting_run.pk}/events").json()["results"]
    event = waiting_run.events.filter(type="message.created").order_by("seq").first()
    event.data = {"id": listed_message_id(listed, event.seq), **event.data}  # as stored before
    event.save()
    assert alice.client.get(f"/v1/runs/{waiting_run.pk}/events").json()["results"] == listed


def listed_message_id(listed: list[dict], event_seq: int) -> str:
    return next(e["data"]["id"] for e in listed if e["seq"] == event_seq)


def test_the_events_page_adds_contents_and_calls_in_a_query_each(alice, waiting_run, in_process):
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
    # One more query for the contents, and one for the calls' cache figures, however many
    # message events the page has.
    assert len(whole) == len(without) + 2
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


@pytest.mark.postgresql(reason="counts the stream's prepared read")
def test_a_poll_that_finds_nothing_new_is_one_statement(alice, waiting_run, in_process):
    run_id = waiting_run.pk
    frames = open_stream(alice, run_id)
    assert next(frames).event == "run.status"
    later(0.5, lambda: delta(run_id, 1, 0, "word"))
    with CaptureQueriesContext(connection) as queries:
        assert next(frames).event == "message.delta"  # after some polls (every 50 ms)
    assert stream_reads(queries) >= 3
    assert all("hango_stream_read" in q["sql"] for q in queries.captured_queries)


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
    assert relay.channel(waiting_run.pk) not in relay.LOCAL._followers


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
