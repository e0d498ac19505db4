"""A worker killed mid-run, with real worker processes on Redis and PostgreSQL: how soon its run
is taken over while the others are busy, and what of the killed worker is left running."""

from __future__ import annotations

import time

import pytest

from runs.models import Run
from tests.support.runs import wait_for_run

pytestmark = pytest.mark.slow

LEASE, INTERVAL, SLICE = 2, 1, 1
# Long runs: 100 turns of 150 ms or more each, far longer than the test.
LONG_RUN = "scripted:workload-100"
SHORT_TIMES = {"HANGO_RUN_LEASE_SECONDS": LEASE, "HANGO_RECONCILE_SECONDS": INTERVAL,
               # No queued run here is old enough to count as lost: only the dead worker's is
               # stranded.
               "HANGO_RECONCILE_GRACE_SECONDS": 600,
               "HANGO_SCRIPTED_DELAY_MS": 150, "HANGO_DEFAULT_MAX_TURNS": 200,
               # One slot each: every slot busy, the run queue long.
               "HANGO_WORKER_CONCURRENCY": 1}


def start_run(caller, agent_id: str) -> str:
    session = caller.client.post("/v1/sessions", {"agent": agent_id}, format="json").json()
    response = caller.client.post(f"/v1/sessions/{session['id']}/messages",
                                  {"content": "Run the benchmark task."}, format="json")
    assert response.status_code == 202, response.content
    return response.json()["run"]["id"]


def backlog_claims(backlog: list[str]) -> int:
    """How many times the backlog's runs have been claimed (a claim raises a run's epoch)."""
    return sum(Run.objects.filter(pk__in=backlog).values_list("epoch", flat=True))


def held_by(run: Run, pid: int) -> bool:
    return f":{pid}:" in run.lease_owner


def test_a_dead_workers_run_is_taken_over_soon_while_the_queue_is_full(alice, make_agent,
                                                                        start_worker):
    agent = make_agent(alice, model=LONG_RUN)["id"]
    # The doomed worker keeps its run for the whole of a long slice; the busy one hands its runs
    # back every second, so the run queue always holds a backlog of them.
    doomed = start_worker("doomed", HANGO_RUN_SLICE_SECONDS=300, **SHORT_TIMES)
    victim = start_run(alice, agent)
    wait_for_run(victim, lambda r: held_by(r, doomed.proc.pid) and r.turn >= 1)
    busy = start_worker("busy", HANGO_RUN_SLICE_SECONDS=SLICE, **SHORT_TIMES)
    backlog = [start_run(alice, agent) for _ in range(6)]
    wait_for_run(backlog[-1], lambda r: r.turn >= 1, timeout=30)  # the busy worker cycles them

    doomed.kill()
    killed_at, claims_at_kill = time.monotonic(), backlog_claims(backlog)
    epoch = Run.objects.get(pk=victim).epoch
    busy.wait_for(lambda log: "reconciler re-enqueued 1 runs" in log, what="a reconciler pass",
                  timeout=60)
    reconciled, claims_at_pass = time.monotonic() - killed_at, backlog_claims(backlog)
    run = wait_for_run(victim, lambda r: r.epoch > epoch and held_by(r, busy.proc.pid),
                       timeout=60)
    taken_over, claims_at_takeover = time.monotonic() - killed_at, backlog_claims(backlog)
    print(f"lease {LEASE} s, interval {INTERVAL} s, slice {SLICE} s: re-enqueued after "
          f"{reconciled:.1f} s, taken over after {taken_over:.1f} s; backlog slices begun "
          f"{claims_at_pass - claims_at_kill} before the pass, "
          f"{claims_at_takeover - claims_at_pass} between it and the takeover")

    # Counted in the busy worker's slices, not seconds, so a loaded machine cannot fail it.
    # The pass runs on its own thread, not behind the queue: it came before the worker had
    # been once round the backlog...
    assert claims_at_pass - claims_at_kill < len(backlog)
    # ...and the run goes ahead of the backlog: it waits only for the slice under way to end
    # (at most one more claim seen, the poll being late), not for the six runs before it.
    assert claims_at_takeover - claims_at_pass <= 2
    assert run.status == "running"


def test_kill_9_of_a_workers_main_process_leaves_nothing_of_it_running(alice, make_agent,
                                                                       start_worker):
    agent = make_agent(alice, model="scripted:workload-40")["id"]
    worker = start_worker("prefork", pool="prefork", **SHORT_TIMES)
    run_id = start_run(alice, agent)
    run = wait_for_run(run_id, lambda r: r.turn >= 2)
    assert not held_by(run, worker.proc.pid)  # a pool child runs it, not the main process

    worker.kill_main()
    deadline = time.monotonic() + 5
    while worker.processes() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert worker.processes() == []  # no pool child, no beat: nothing advances the run unseen
    turn = Run.objects.get(pk=run_id).turn
    time.sleep(1)
    assert Run.objects.get(pk=run_id).turn == turn

    # A live worker's reconciler hands it on once its lease runs out; it ends as it should.
    start_worker("rescuer", **SHORT_TIMES)
    run = wait_for_run(run_id, timeout=60)
    assert run.status == "completed", run.error
