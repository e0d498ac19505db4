"""Following a run's event stream from a test: opening it, and writing what a run in this
process writes to its channel and database (a delta, a turn's commit with or without its
marker, the end), now or a moment later from another thread."""

from __future__ import annotations

import threading

from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from runs.execution.events import append_events, status_event
from runs.execution.worker import execute_run
from runs.live import relay
from runs.models import Run, RunEvent
from tests.support.sse import chunks_to_lines, frames_of


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


def delta(run_id, turn: int, index: int, text: str) -> None:
    """A delta as a run executing in this process publishes it."""
    sink = relay.run_deltas(run_id)
    assert sink is not None
    sink.delta(turn, index, text)


def end(run_id, turn: int, count: int) -> None:
    sink = relay.run_deltas(run_id)
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


def stream_reads(queries: CaptureQueriesContext) -> int:
    return sum("hango_stream_read" in q["sql"] and "EXECUTE" in q["sql"]
               for q in queries.captured_queries)
