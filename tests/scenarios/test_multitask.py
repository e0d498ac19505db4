"""Messages posted at once to one session, through the API on real PostgreSQL, their runs
executed by real Celery workers on Redis: each ``multitask`` strategy keeps one active run per
session at every moment the watch reads, loses no message, keeps each poster's order, and leaves
no tool call without its result."""

from __future__ import annotations

import time

import pytest
import redis
from django.db import close_old_connections

from runs.execution import worker
from runs.models import Run, RunStatus
from tests.support.history import assert_valid_history
from tests.support.multitask import (
    ActiveWatch,
    keeps_each_threads_order,
    post_burst,
    text_of,
    user_texts,
    wait_until_settled,
)

THREADS, EACH = 6, 3


def answers_after_each_user_text(session_id: str) -> dict[str, str]:
    """Each user text, with the text of the first final answer stored after it (before the
    next user text): "" when its run was cancelled before answering."""
    messages = assert_valid_history(session_id)
    answers, current = {}, None
    for m in messages:
        if m.role == "user" and m.content[0]["type"] == "text":
            current = m.content[0]["text"]
            answers[current] = ""
        elif (m.role == "assistant" and current and not answers[current]
              and m.content[-1]["type"] == "text" and m.content[-1]["text"].startswith("You")):
            answers[current] = m.content[-1]["text"]
    return answers


def assert_clean(workers) -> None:
    """No task of the workers failed or hit an error (a deadlock would show here)."""
    for process in workers:
        log = process.log()
        assert "Traceback" not in log and " ERROR/" not in log, log[-3000:]


def posted_text(run: Run) -> str:
    """The text of the message the run answers: its first stored message."""
    return run.messages.order_by("seq").first().content[0]["text"]


def test_concurrent_rejects_start_one_run_and_the_rest_answer_409_naming_it(
        alice, make_session, broker, transactional_db):
    session = make_session(alice)  # no worker: the first run stays active
    answers = [a for thread in post_burst(alice, session["id"], "reject", threads=8, per_thread=1)
               for a in thread]
    started = [body for code, body in answers if code == 202]
    assert len(started) == 1, answers
    run_id = started[0]["run"]["id"]
    refused = [body for code, body in answers if code != 202]
    assert len(refused) == 7
    assert all(b["error"]["code"] == "conflict" and b["error"]["detail"] == {"active_run": run_id}
               for b in refused)
    assert Run.objects.filter(session_id=session["id"]).count() == 1


@pytest.mark.slow
def test_a_burst_of_enqueues_answers_every_message_in_the_order_posted(alice, make_session,
                                                                        start_worker):
    workers = [start_worker("w1"), start_worker("w2")]
    session = make_session(alice)
    with ActiveWatch(session["id"]) as watch:
        answers = post_burst(alice, session["id"], "enqueue", threads=THREADS, per_thread=EACH)
        runs = wait_until_settled(session["id"])
    assert all(code == 202 for thread in answers for code, _ in thread), answers
    assert watch.most == 1 and watch.busy > 0, (watch.most, watch.busy, watch.reads)
    assert len(runs) == THREADS * EACH
    assert {r.status for r in runs} == {RunStatus.COMPLETED}, [(r.status, r.error) for r in runs]
    texts = user_texts(session["id"])
    assert keeps_each_threads_order(texts, threads=THREADS, per_thread=EACH), texts
    # The runs started in the order of the posts, and each answered its own message.
    started = sorted(runs, key=lambda r: r.started_at)
    assert [posted_text(r) for r in started] == texts
    for text, answer in answers_after_each_user_text(session["id"]).items():
        assert answer.startswith(f'You said: "{text}"'), (text, answer)
    assert_clean(workers)


@pytest.mark.slow
def test_a_burst_of_interrupts_cancels_each_run_before_the_last_and_answers_the_last(
        alice, make_session, start_worker):
    # Each thread posts its next interrupt only once the session's run is past its first turn
    # (waited for, not slept for): some run is then cancelled mid-run however slow the machine
    # is to hand a task to a worker. A run takes five calls of a second, so the one seen past
    # its first turn is still running when the interrupt lands.
    workers = [start_worker(name, HANGO_SCRIPTED_DELAY_MS=1000) for name in ("w1", "w2")]
    session = make_session(alice)

    def once_a_run_is_past_its_first_turn() -> None:
        deadline = time.monotonic() + 60  # a guard against a hang only
        while not Run.objects.filter(session_id=session["id"], status=RunStatus.RUNNING,
                                     turn__gte=1).exists():
            assert time.monotonic() < deadline, "no run of the session got past a turn"
            close_old_connections()
            time.sleep(0.02)

    with ActiveWatch(session["id"]) as watch:
        answers = post_burst(alice, session["id"], "interrupt", threads=THREADS, per_thread=EACH,
                             before_next=once_a_run_is_past_its_first_turn)
        runs = wait_until_settled(session["id"])
    assert all(code == 202 for thread in answers for code, _ in thread), answers
    assert watch.most == 1 and watch.busy > 0, (watch.most, watch.busy, watch.reads)
    texts = user_texts(session["id"])
    assert keeps_each_threads_order(texts, threads=THREADS, per_thread=EACH), texts
    by_message = {posted_text(r): r for r in runs}
    last = by_message[texts[-1]]
    assert last.status == RunStatus.COMPLETED, last.error
    assert {r.status for r in runs} <= {RunStatus.CANCELLED, RunStatus.COMPLETED}
    # Some were stopped by their worker at a boundary, mid-run; no call was left unanswered.
    assert any(r.status == RunStatus.CANCELLED and r.turn > 0 for r in runs)
    answered = answers_after_each_user_text(session["id"])  # a valid history, too
    assert answered[texts[-1]].startswith(f'You said: "{texts[-1]}"')
    assert_clean(workers)


@pytest.mark.slow
def test_a_mixed_burst_loses_no_message_and_the_last_one_is_answered(alice, make_session,
                                                                      start_worker):
    workers = [start_worker("w1", HANGO_SCRIPTED_DELAY_MS=20)]
    session = make_session(alice)
    strategies = ["enqueue", "interrupt"] * (THREADS // 2)
    with ActiveWatch(session["id"]) as watch:
        answers = post_burst(alice, session["id"], strategies, threads=THREADS, per_thread=EACH,
                             pause=0.05)
        runs = wait_until_settled(session["id"])
    assert all(code == 202 for thread in answers for code, _ in thread), answers
    assert watch.most == 1
    texts = user_texts(session["id"])
    assert keeps_each_threads_order(texts, threads=THREADS, per_thread=EACH), texts
    assert len(runs) == THREADS * EACH
    answered = answers_after_each_user_text(session["id"])
    assert answered[texts[-1]].startswith(f'You said: "{texts[-1]}"')
    # A message enqueued after the last interrupt is answered; none is answered twice.
    for thread, posted in enumerate(answers):
        for index, (_, body) in enumerate(posted):
            run = Run.objects.get(pk=body["run"]["id"])
            text = text_of(thread, index)
            if run.status == RunStatus.COMPLETED:
                assert answered[text].startswith(f'You said: "{text}"'), (text, answered[text])
    assert_clean(workers)


@pytest.mark.slow
def test_a_queue_stranded_by_a_crash_after_a_runs_end_is_started_by_a_workers_reconciler(
        alice, make_session, broker, worker_processes):
    session = make_session(alice)
    first = alice.client.post(f"/v1/sessions/{session['id']}/messages", {"content": "first"},
                              format="json").json()["run"]["id"]
    waiting = alice.client.post(f"/v1/sessions/{session['id']}/messages",
                                {"content": "second", "multitask": "enqueue"},
                                format="json").json()["run"]["id"]
    # A worker ends the first run and dies before it starts the second (its task is lost too).
    assert worker.execute_run(first) == worker.Outcome.COMPLETED
    redis.Redis.from_url(broker).flushdb()
    assert Run.objects.get(pk=waiting).status == RunStatus.PENDING
    started = worker_processes("rescuer", broker, HANGO_RECONCILE_SECONDS=1)
    runs = wait_until_settled(session["id"])
    assert [r.status for r in runs] == [RunStatus.COMPLETED, RunStatus.COMPLETED]
    assert answers_after_each_user_text(session["id"])["second"].startswith('You said: "second"')
    assert "reconciler re-enqueued 1 runs" in started.log()
    assert_clean([started])
