"""Overload waits, it does not fail: a real worker process that comes up on a backlog far larger
than its pools (four database connections, a tight pool timeout, a reconciler that calls a run
stranded after five seconds) admits the runs as fast as its pools serve them, and every run
completes on its first task — no pool timeout, no task retried for want of a connection, no
Redis pool exhausted, no run sent again by the reconciler. A task a worker has reserved but not
yet started, however long it waits, is not taken for a dead worker's either, nor is a task its
worker has taken from the queue and not yet recorded as reserved (a worker frozen between the
two, as a starved CPU leaves it): the reconciler sends a run again only when two passes in a
row find its task in neither place, as they do when that worker died in between."""

from __future__ import annotations

import os
import signal
import time
from datetime import timedelta

import pytest
import redis
from django.utils import timezone

from runs.execution import tasks
from runs.execution.queued_tasks import waiting_runs
from runs.models import Run
from tests.support.runs import wait_for_run

pytestmark = pytest.mark.slow

RUNS, SLOTS, POOL = 150, 60, 4
GRACE = 5  # seconds: the runs queued first are older than this when the worker starts
# What overload used to leave in a worker's log: a pool timeout (and the retry and resumption
# it caused), a Redis pool exhausted, a run waiting in the queue sent again as if stranded.
FAILURES = ("stayed in use for", "Retry in", "lost its database", "MaxConnectionsError",
            "Too many connections", "re-enqueued")


def test_a_backlog_larger_than_the_pools_waits_and_every_run_completes_once(
        alice, make_agent, start_worker):
    agent = make_agent(alice, model="scripted:workload-2")
    run_ids = []
    for k in range(RUNS):  # queued before any worker is up: the worker starts on all of them
        session = alice.client.post("/v1/sessions", {"agent": agent["id"]}, format="json")
        posted = alice.client.post(f"/v1/sessions/{session.json()['id']}/messages",
                                   {"content": f"Run the benchmark task. #{k}"}, format="json")
        assert posted.status_code == 202, posted.content
        run_ids.append(posted.json()["run"]["id"])
    worker = start_worker(HANGO_SCRIPTED_DELAY_MS=300, HANGO_WORKER_CONCURRENCY=SLOTS,
                          HANGO_DATABASE_POOL_SIZE=POOL, HANGO_DATABASE_POOL_TIMEOUT=0.5,
                          HANGO_RECONCILE_SECONDS=1, HANGO_RECONCILE_GRACE_SECONDS=GRACE)
    for run_id in run_ids:
        assert wait_for_run(run_id, timeout=180).status == "completed"
    assert sorted(set(Run.objects.filter(pk__in=run_ids).values_list("status", flat=True))) \
        == ["completed"]
    # A task logs its result after its run's end committed (and the session's next message,
    # the signals' receivers): the last ones may not be in the log yet.
    for _ in range(600):
        if len(worker.task_results()) >= RUNS:
            break
        time.sleep(0.1)
    log = worker.log()
    assert [line for line in log.splitlines() if any(f in line for f in FAILURES)] == []
    # One task a run, each completing it: none delivered again, none skipped as a duplicate.
    assert worker.task_results() == ["completed"] * RUNS


def test_a_task_reserved_and_not_started_is_not_sent_again_however_long_it_waits(
        alice, make_agent, start_worker):
    # One slot, two tasks prefetched: the second waits, reserved and not started, for the whole
    # of the first run, several grace periods long, as a prefetched task waits for a slot under a
    # starved CPU. Its worker is alive: its reservation stays recent, its run is not sent again.
    agent = make_agent(alice, model="scripted:workload-3")
    run_ids = []
    for k in range(2):
        session = alice.client.post("/v1/sessions", {"agent": agent["id"]}, format="json")
        posted = alice.client.post(f"/v1/sessions/{session.json()['id']}/messages",
                                   {"content": f"Run the benchmark task. #{k}"}, format="json")
        run_ids.append(posted.json()["run"]["id"])
    worker = start_worker(HANGO_SCRIPTED_DELAY_MS=1500, HANGO_WORKER_CONCURRENCY=1,
                          HANGO_RECONCILE_SECONDS=1, HANGO_RECONCILE_GRACE_SECONDS=2,
                          args=("--prefetch-multiplier", "2"))
    for run_id in run_ids:
        assert wait_for_run(run_id, timeout=120).status == "completed"
    log = worker.log()
    assert [line for line in log.splitlines() if any(f in line for f in FAILURES)] == []
    worker.wait_for(lambda log: len(worker.task_results()) >= 2, what="two task results")
    assert worker.task_results() == ["completed"] * 2  # no duplicate, skipped


def _post(alice, agent) -> str:
    session = alice.client.post("/v1/sessions", {"agent": agent["id"]}, format="json")
    posted = alice.client.post(f"/v1/sessions/{session.json()['id']}/messages",
                               {"content": "Run the benchmark task. #0"}, format="json")
    assert posted.status_code == 202, posted.content
    return posted.json()["run"]["id"]


def _taken_and_unrecorded(worker, broker: str, alice, agent) -> tuple[str, list[str]]:
    """A run whose task the worker, frozen (SIGSTOP) while its BRPOP waits, has taken from the
    list and not recorded as reserved: Redis (the test's own) answered the BRPOP, the reply
    waits unread. The runs whose task reached the list instead (the BRPOP had timed out) are run
    and returned."""
    client, others = redis.Redis.from_url(broker), []
    for _ in range(100):
        os.kill(worker.proc.pid, signal.SIGSTOP)
        if any(c["cmd"] == "brpop" and "b" in c["flags"] for c in client.client_list()):
            run_id = _post(alice, agent)
            if run_id not in waiting_runs(3600):
                return run_id, others
            others.append(run_id)  # queued: the BRPOP had timed out
        os.kill(worker.proc.pid, signal.SIGCONT)
        for run_id in others:
            assert wait_for_run(run_id, timeout=120).status == "completed"
    raise AssertionError("the worker was never frozen while its BRPOP waited")


def _overdue(run_id: str) -> None:  # as a run that waited behind a backlog
    Run.objects.filter(pk=run_id).update(updated_at=timezone.now() - timedelta(hours=1))


def test_a_task_taken_from_the_queue_and_not_yet_recorded_is_not_sent_again(
        alice, make_agent, private_broker, worker_processes):
    agent = make_agent(alice, model="scripted:workload-1")
    private_broker.start()
    broker = private_broker.url
    worker = worker_processes("w1", broker, HANGO_RECONCILE_SECONDS=3600)  # passes: the test's
    run_id, others = _taken_and_unrecorded(worker, broker, alice, agent)
    _overdue(run_id)
    assert tasks.reconcile() == 0  # in neither place: its worker may only be slow
    os.kill(worker.proc.pid, signal.SIGCONT)
    run = wait_for_run(run_id, timeout=120)
    assert (run.status, run.epoch) == ("completed", 1)  # one claim, never fenced
    assert tasks.reconcile() == 0
    worker.wait_for(lambda log: len(worker.task_results()) > len(others), what="the results")
    assert worker.task_results() == ["completed"] * (len(others) + 1)  # no duplicate


def test_a_task_its_worker_took_and_died_with_is_sent_again_by_the_next_pass(
        alice, make_agent, private_broker, worker_processes):
    agent = make_agent(alice, model="scripted:workload-1")
    private_broker.start()
    broker = private_broker.url
    worker = worker_processes("w1", broker, HANGO_RECONCILE_SECONDS=3600)
    run_id, _ = _taken_and_unrecorded(worker, broker, alice, agent)
    worker.kill()  # the task is lost for good: taken from the list, never recorded
    _overdue(run_id)
    assert tasks.reconcile() == 0
    assert tasks.reconcile() == 1  # missed twice: sent again
    worker_processes("w2", broker)
    assert wait_for_run(run_id, timeout=120).status == "completed"
