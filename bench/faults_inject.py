"""The fault suite's faults, injected one after another at seeded random points of the load.

* ``kill_child`` — SIGKILL the pool process holding a run (its worker's main process forks a
  new one; the task comes back, the run's lease has to expire first).
* ``kill_main`` — SIGKILL a worker's main process, note which of its processes (pool children,
  an embedded beat if one was started) outlive it, and start a replacement worker.
* ``stall_cancel`` / ``stall_approval`` — SIGSTOP a worker's processes (main, pool) while
  one of its children holds a run; once that run's lease has expired, cancel it through the API
  and post a new message to its session (cancel), or wait until another worker has taken it
  over, paused it for approval and the suite has approved it (approval); SIGCONT the worker
  after the lease and a reconcile interval have passed.
* ``duplicate`` — publish the ``runs.execute_run`` task of an active run twice more.
* ``redis_restart`` / ``pg_restart`` — stop the private Redis (which keeps nothing: every queued
  task is lost) or PostgreSQL (fast shutdown: every connection drops), wait, start it again.

Each fault is recorded as a :class:`~bench.faults_check.Fault` with the runs it interrupted;
for the restarts its time is when the service was back (recovery counts from there).
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from django.db import connection
from django.utils import timezone

from bench.faults_check import Cancel, Fault
from bench.faults_load import ACTIVE, Api, Driver, now
from bench.faults_stack import Postgres, Redis, Worker, alive, wait_until
from runs.execution.tasks import execute_run
from runs.models import Run, RunEvent

KINDS = ("kill_child", "kill_main", "stall_cancel", "stall_approval", "duplicate",
         "redis_restart", "pg_restart")


def held_runs() -> dict[str, int]:
    """Running runs whose lease is live, by run id: the pid of the process holding each."""
    connection.close()  # a fresh connection: the server may have restarted since the last one
    rows = Run.objects.filter(status="running", lease_expires_at__gt=timezone.now()).values_list(
        "id", "lease_owner")
    # lease_owner is runs.execution.worker.worker_identity(): host:pid:thread.
    return {str(run): int(owner.split(":")[1]) for run, owner in rows if owner.count(":") == 2}


def run_agent(run_id: str) -> str:
    return Run.objects.filter(pk=run_id).values_list("agent__name", flat=True).first() or ""


def active_runs() -> list[str]:
    connection.close()
    return [str(r) for r in Run.objects.filter(status__in=ACTIVE).values_list("id", flat=True)]


@dataclass
class Injector:
    api: Api
    driver: Driver
    rng: random.Random
    workers: list[Worker]
    add_worker: Callable[[], Worker]
    redis: Redis
    pg: Postgres
    lease: float
    reconcile: float
    outage: float
    plan: list[str]
    faults: list[Fault] = field(default_factory=list)
    cancels: list[Cancel] = field(default_factory=list)
    orphans: list[tuple[str, int, str]] = field(default_factory=list)  # worker, pid, role
    skipped: list[str] = field(default_factory=list)
    pg_outages: list[tuple[datetime, datetime]] = field(default_factory=list)
    error: BaseException | None = None
    stop: threading.Event = field(default_factory=threading.Event)

    @property
    def killed_pids(self) -> set[int]:
        return {pid for w in self.workers for pid in w.killed}

    def run(self) -> None:
        """The plan, in order, with a random pause before each fault; never raises (the
        error is kept for the suite to report)."""
        try:
            wait_until(lambda: len(held_runs()) >= 2 or self.stop.is_set(), timeout=120,
                       what="runs held by workers", every=0.2)
            for kind in self.plan:
                if self.stop.wait(self.rng.uniform(1.0, 3.0)):
                    return
                fault = getattr(self, kind)()
                if fault is None:
                    self.skipped.append(kind)
                else:
                    self.faults.append(fault)
        except BaseException as exc:  # noqa: BLE001 (reported by the suite, which fails)
            self.error = exc
        finally:
            self.driver.injector_done.set()

    # -- finding a victim --------------------------------------------------------------------

    def _owner(self, pid: int) -> Worker | None:
        return next((w for w in self.workers if w.running() and pid in w.processes()), None)

    def _victim(self, agent: str | None = None, tries: int = 100) -> tuple[str, int, Worker] | None:
        """A running run (of ``agent``'s kind), the pid holding it and its worker."""
        for _ in range(tries):
            held = held_runs()
            choices = sorted(r for r in held if agent is None or run_agent(r) == agent)
            if choices:
                run = self.rng.choice(choices)
                worker = self._owner(held[run])
                if worker is not None:
                    return run, held[run], worker
            if self.stop.wait(0.1):
                break
        return None

    def _held_by(self, worker: Worker) -> list[str]:
        pids = set(worker.processes())
        return sorted(r for r, pid in held_runs().items() if pid in pids)

    # -- the faults --------------------------------------------------------------------------

    def kill_child(self) -> Fault | None:
        victim = self._victim()
        if victim is None:
            return None
        run, pid, worker = victim
        held = sorted(r for r, p in held_runs().items() if p == pid)
        at = now()
        worker.kill(pid)
        return Fault("kill_child", at, tuple(held), f"{worker.name} pid {pid}")

    def kill_main(self) -> Fault | None:
        victim = self._victim()
        if victim is None:
            return None
        _, _, worker = victim
        held, before = self._held_by(worker), worker.processes()
        at = now()
        worker.kill(worker.pid)
        self.stop.wait(3.0)
        for pid in before:
            if alive(pid):
                role = "beat" if pid == worker.beat_pid else "pool"
                self.orphans.append((worker.name, pid, role))
            else:
                worker.killed.add(pid)
        self.workers.append(self.add_worker().wait_ready())
        return Fault("kill_main", at, tuple(held), f"{worker.name} pid {worker.pid}")

    def stall_cancel(self) -> Fault | None:
        return self._stall("plain")

    def stall_approval(self) -> Fault | None:
        return self._stall("approval")

    def _stall(self, agent: str) -> Fault | None:
        victim = self._victim(agent)
        if victim is None:
            return None
        run, _, worker = victim
        held = self._held_by(worker)
        at = now()
        worker.stall()
        try:
            wait_until(lambda: self._lease_gone(run), timeout=self.lease + 5,
                       what=f"the lease of {run} to expire", every=0.02)
            if agent == "plain":
                self._cancel(run)
                held = [r for r in held if r != run]
            else:
                self._await_approval(run, at)
            # Past the lease and a reconcile pass, so the worker's other runs are taken over.
            rest = self.lease + self.reconcile + 1 - (now() - at).total_seconds()
            self.stop.wait(max(0.0, rest))
        finally:
            worker.resume()
        return Fault(f"stall_{'cancel' if agent == 'plain' else 'approval'}", at, tuple(held),
                     f"{worker.name}, run {run}")

    def _lease_gone(self, run_id: str) -> bool:
        lease = Run.objects.filter(pk=run_id).values_list("lease_expires_at", flat=True).first()
        return lease is None or lease <= timezone.now()

    def _cancel(self, run_id: str) -> None:
        response = self.api.call("POST", f"/v1/runs/{run_id}/cancel")
        answered = now()
        if response.status_code == 202:
            self.cancels.append(Cancel(run_id, answered, response.json()["status"]))
            job = self.driver.job_of_run(run_id)
            if job is not None:
                self.driver.follow_up(job.session)

    def _await_approval(self, run_id: str, since: datetime) -> None:
        """Until another worker paused the run and the driver approved it (or a while)."""

        def approved() -> bool:
            statuses = list(RunEvent.objects.filter(run_id=run_id, type="run.status",
                                                    created_at__gt=since)
                            .order_by("seq").values_list("data__status", flat=True))
            return any(a == "awaiting_approval" and b == "queued"
                       for a, b in zip(statuses, statuses[1:], strict=False))

        try:
            wait_until(approved, timeout=self.lease + self.reconcile + 20,
                       what=f"an approval of {run_id}", every=0.1)
        except TimeoutError:
            pass  # the run may have ended first: the stall still happened

    def duplicate(self) -> Fault | None:
        runs = sorted(active_runs())
        if not runs:
            return None
        run = self.rng.choice(runs)
        at = now()
        execute_run.delay(run)
        execute_run.delay(run)
        return Fault("duplicate", at, (), f"run {run}")

    def redis_restart(self) -> Fault | None:
        self.redis.restart(self.outage)
        return Fault("redis_restart", now(), tuple(active_runs()), f"down {self.outage:.0f}s")

    def pg_restart(self) -> Fault | None:
        down = now()
        self.pg.stop("fast")
        time.sleep(self.outage)
        self.pg.start()
        back = now()
        self.pg_outages.append((down, back))
        return Fault("pg_restart", back, tuple(active_runs()), f"down {self.outage:.0f}s")
