"""Runs in flight under real model latency: N runs of the shared workload at once, each model
call taking ``--latency-ms``, on the worker exactly as ``make worker`` starts it (the worker
group, its documented defaults: a gevent process per CPU, 1,000 runs and 10 connections a
process), and the peers (langchain ``create_agent`` and deepagents on asyncio, a pool of 20
PostgreSQL connections) on the same runs in the same invocation. Prints figures only; how to
run it and the targets: README.md ("Runs in flight").

hango's runs are queued as a post leaves them (session, user message, queued run and its
status event, written in bulk beforehand: posting is not what is measured), then handed to the
worker as a post hands them over, one task each (``runs.execution.tasks.send_run`` at the run's fair
priority), the clock starting at the first. The worker group imports
:mod:`bench.concurrency_app` (``-I``), which stamps each run's first model call; the runs'
``finished_at`` end the clock. While they go the benchmark samples the runs in flight, the
worker's PostgreSQL connections and its RSS, meters the CPU of the workers, of the PostgreSQL
backends of the benchmark's own database (no other database's) and of the sender, and counts
in the workers' log what overload leaves there (:mod:`bench.worker_logs`).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics as st
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import overload_trace  # noqa: E402
from bench.concurrency_peer import PEERS, run_peer  # noqa: E402
from bench.concurrency_report import report  # noqa: E402
from bench.databases import ensure_database  # noqa: E402
from bench.faults_stack import wait_until  # noqa: E402
from bench.handover import hand_over, queue_runs  # noqa: E402
from bench.sampling import (  # noqa: E402
    CpuMeter,
    Sampler,
    backends_of,
    connections_named,
    pct,
    pids_named,
)
from bench.worker_logs import overload_counts  # noqa: E402
from tests.support.servers import stop_group  # noqa: E402

DEFAULT_DB = "postgres://postgres@127.0.0.1:5432/hango_bench_concurrency"
DEFAULT_BROKER = "redis://127.0.0.1:6379/10"
WORKER_APP = "hango-bench-worker"  # the worker's connections by name (libpq reads PGAPPNAME)
PROMPT = "Run the benchmark task. #"
DEFAULT_SIZES = "10,100,1000,5000"


class Hango:
    def __init__(self, db: str, broker: str, turns: int, latency_ms: int, concurrency: int,
                 pool_size: int, processes: int, senders: int = 2) -> None:
        """``concurrency``, ``pool_size`` and ``processes`` of 0 leave the documented defaults
        (``make worker``'s) alone; another value sets its variable for the workers."""
        ensure_database(db)
        self.env = {"DATABASE_URL": db, "CELERY_BROKER_URL": broker, "HANGO_RUN_INLINE": "0",
                    "BENCH_WORKLOAD_TURNS": str(turns),
                    "HANGO_SCRIPTED_DELAY_MS": str(latency_ms),
                    "HANGO_DEFAULT_MAX_TURNS": str(turns + 1)}
        for name, value in (("HANGO_WORKER_CONCURRENCY", concurrency),
                            ("HANGO_DATABASE_POOL_SIZE", pool_size),
                            ("HANGO_WORKER_PROCESSES", processes)):
            if value:
                self.env[name] = str(value)
            else:
                os.environ.pop(name, None)
        os.environ.update(self.env)
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hango_project.settings")
        import django

        django.setup()
        import redis
        from django.core.management import call_command
        from django.db import connection

        from accounts.services import tenant_bootstrap
        from agents.services import agent_create

        call_command("migrate", verbosity=0)
        self.redis = redis.Redis.from_url(broker)
        self.connection = connection
        self.turns = turns
        issued = tenant_bootstrap(tenant_name=f"bench-concurrency-{time.time_ns()}",
                                  email=f"bench-{time.time_ns()}@concurrency.test")
        self.member, self.key = issued.api_key.member, issued.plaintext
        self.agent = agent_create(member=self.member, data={
            "name": f"workload-{turns}", "model": f"scripted:workload-{turns}",
            "config": {"max_turns": turns + 1}})
        self.processes = processes or len(os.sched_getaffinity(0))  # the group's own default
        self.senders = senders
        self.group: subprocess.Popen | None = None
        self.stamps = ""
        self.logs: list[str] = []
        self.tags: dict[str, str] = {}
        self.cpus = len(os.sched_getaffinity(0))

    # -- the workers ---------------------------------------------------------------------

    def start(self) -> None:
        """The worker processes, warmed (imports, the prepared statements) with a few runs."""
        self.start_workers()
        self.execute(self.queue(3 * self.processes), sample=False)

    def start_workers(self) -> None:
        """``make worker``'s command (``python -m hango_project.worker_group --loglevel INFO``)
        with the stamping module imported (``-I``), its processes logging to one file."""
        self.redis.delete("runs", "unacked", "unacked_index")
        log = tempfile.NamedTemporaryFile("w+", prefix="bench-concurrency-", suffix=".log",
                                          delete=False)
        self.stamps = tempfile.NamedTemporaryFile(prefix="bench-first-calls-",
                                                  delete=False).name
        self.records = tempfile.NamedTemporaryFile(prefix="bench-deliveries-",
                                                   delete=False).name
        cmd = [sys.executable, "-m", "hango_project.worker_group", "--loglevel", "INFO",
               "-I", "bench.concurrency_app"]
        self.group = subprocess.Popen(
            cmd, cwd=ROOT, env={**os.environ, **self.env, "PGAPPNAME": WORKER_APP,
                                "BENCH_FIRST_CALLS_FILE": self.stamps,
                                "BENCH_DELIVERIES_FILE": self.records},
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.logs.append(log.name)
        deadline = time.monotonic() + 90
        while Path(log.name).read_text().count(" ready.") < self.processes:
            if self.group.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"workers did not start:\n{Path(log.name).read_text()}")
            time.sleep(0.1)

    def slots(self) -> str:
        """The workers' processes, runs and connections, e.g. ``2x gevent-1000/pool-10``."""
        from hango_project.config import from_environment

        knobs = from_environment()  # the workers' environment: self.env over this one's
        return (f"{self.processes}x gevent-{knobs.worker_concurrency}/"
                f"pool-{knobs.database_pool_size}")

    def worker_pids(self) -> list[int]:
        """The group's front and its worker processes."""
        if self.group is None:
            return []
        try:
            children = Path(f"/proc/{self.group.pid}/task/{self.group.pid}/children").read_text()
        except OSError:
            return []
        return [self.group.pid, *map(int, children.split())]

    def stop(self) -> dict[str, float]:
        """Stop the workers (a warm shutdown: each appends its stamps); the first model call of
        each run they made, by run id."""
        firsts: dict[str, float] = {}
        if self.group is not None:
            stop_group(self.group, timeout=60)
        if self.stamps:
            for line in Path(self.stamps).read_text().splitlines():
                tag, at = line.split()
                if tag in self.tags:
                    firsts[self.tags[tag]] = float(at)
            os.unlink(self.stamps)
        self.group, self.stamps = None, ""
        return firsts

    def resent(self, sent: dict[str, float], firsts: dict[str, float]) -> list[dict]:
        """The timeline of each run the reconciler sent again in the round
        (:mod:`bench.overload_trace`)."""
        records = Path(self.records).read_text() if self.records else ""
        with open(self.logs[-1], errors="replace") as f:
            text = f.read()
        overload_trace.print_missed(overload_trace.missed_once(text, records, sent))
        return overload_trace.timelines(text, records, sent, firsts)

    def rss_mib(self) -> float:
        total = 0
        for pid in self.worker_pids()[1:]:
            try:
                with open(f"/proc/{pid}/status") as f:
                    total += int(next(x for x in f if x.startswith("VmRSS:")).split()[1])
            except OSError:  # restarted by the group meanwhile
                continue
        return total / 1024

    # -- runs ----------------------------------------------------------------------------

    def queue(self, n: int, *, other_tenant: bool = False) -> list[str]:
        """n runs as message_post leaves them (its rows, in bulk; no task sent), of the
        benchmark's tenant or of another one."""
        member, agent = self.other() if other_tenant else (self.member, self.agent)
        tag = time.time_ns()
        run_ids = queue_runs(member, agent.pk, [f"{PROMPT}{tag}-{k}" for k in range(n)])
        self.tags.update({f"{tag}-{k}": run_id for k, run_id in enumerate(run_ids)})
        return run_ids

    def other(self):
        """A second tenant's member and agent (the newcomer of the fairness round)."""
        if not hasattr(self, "_other"):
            from accounts.services import tenant_bootstrap
            from agents.services import agent_create

            member = tenant_bootstrap(tenant_name=f"bench-newcomer-{time.time_ns()}",
                                      email=f"new-{time.time_ns()}@concurrency.test"
                                      ).api_key.member
            self._other = member, agent_create(member=member, data={
                "name": f"workload-{self.turns}", "model": f"scripted:workload-{self.turns}",
                "config": {"max_turns": self.turns + 1}})
        return self._other

    def fairness(self, backlog: int) -> dict:
        """``backlog`` runs of the benchmark's tenant handed over, then one of another tenant:
        how soon each made its first model call, with the worker's cap below the backlog."""
        from runs.models import Run, RunStatus

        self.start()
        try:
            queued, newcomer = self.queue(backlog), self.queue(1, other_tenant=True)[0]
            sent = self.hand_over([*queued, newcomer])
            wait_until(lambda: Run.objects.filter(pk=newcomer, status=RunStatus.COMPLETED)
                       .exists(), timeout=600, what="the newcomer's run", every=0.2)
            started = Run.objects.filter(pk__in=queued, started_at__isnull=False).count()
        finally:
            firsts = self.stop()
        waited = sorted(firsts[r] - sent[r] for r in queued if r in firsts)
        return {"backlog": backlog, "newcomer_first": firsts[newcomer] - sent[newcomer],
                "backlog_started": started, "backlog_first_p50": st.median(waited),
                "backlog_first_max": waited[-1]}

    def hand_over(self, run_ids: list[str]) -> dict[str, float]:
        """Each run's task sent as a post sends it, from ``--senders`` threads
        (:func:`bench.handover.hand_over`); when each was sent."""
        return hand_over(run_ids, senders=self.senders)

    def execute(self, run_ids: list[str], *, sample: bool = True) -> dict:
        from runs.models import Run, RunStatus

        finished = (RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED)

        def running(cur) -> float:
            cur.execute("SELECT count(*) FILTER (WHERE status = 'running') FROM runs")
            return float(cur.fetchone()[0])

        idle_rss = self.rss_mib()
        sampler = Sampler({"running": running, "connections": connections_named(WORKER_APP),
                           "rss": lambda cur: self.rss_mib()}, every=0.2)
        me = os.getpid()
        meter = CpuMeter({"worker": self.worker_pids, "postgres": backends_of(),
                          "redis": lambda: pids_named("redis-server"),
                          "sender": lambda: [me]})
        logged = Path(self.logs[-1]).stat().st_size
        if sample:
            sampler.start()
        meter.start()
        started = time.time()
        sent = self.hand_over(run_ids)
        handed_over = time.time() - started
        while True:
            left = Run.objects.filter(pk__in=run_ids).exclude(status__in=finished).count()
            if not left:
                break
            if self.group is None or self.group.poll() is not None:
                raise SystemExit(f"the worker group died; the logs: {self.logs}")
            time.sleep(0.2)
        cpu = meter.stop()
        samples = sampler.stop() if sample else sampler.values
        rows = list(Run.objects.filter(pk__in=run_ids).values_list("status", "turn",
                                                                    "finished_at"))
        bad = [status for status, _, _ in rows if status != RunStatus.COMPLETED]
        if bad:
            raise SystemExit(f"{len(bad)} runs did not complete ({set(bad)}); logs {self.logs}")
        wall = max(f.timestamp() for _, _, f in rows) - started
        with open(self.logs[-1], errors="replace") as f:  # this round's lines only
            f.seek(logged)
            counts = overload_counts(f.read())
        # The CPU-bound limit: the wall the round's CPU needs at the least on these cores (Redis,
        # one server every helper shares, is metered but left out of it).
        cpu_bound = sum(cpu[g] for g in ("worker", "postgres", "sender")) / self.cpus
        return {**counts, "cpu_bound": cpu_bound, "load": os.getloadavg()[0],
                "runs": len(run_ids), "calls": self.turns + 1, "wall": wall,
                "handed_over": handed_over, "most_in_flight": max(samples["running"], default=0),
                "turns_per_s": sum(t for _, t, _ in rows) / wall,
                "connections_peak": max(samples["connections"], default=0),
                "rss_idle_mib": idle_rss, "rss_peak_mib": max(samples["rss"], default=idle_rss),
                **{f"cpu_ms_{group}": spent * 1000 / len(run_ids)
                   for group, spent in cpu.items()},
                "sent": sent}

    def round(self, n: int) -> dict:
        """One round of n runs on fresh workers."""
        self.start()
        try:
            row = self.execute(self.queue(n))
        finally:
            firsts = self.stop()
        sent = row.pop("sent")
        row["resent"] = self.resent(sent, firsts)
        if row["resent"]:
            overload_trace.print_timelines(row["resent"])
        to_first = [firsts[r] - at for r, at in sent.items() if r in firsts]
        row.update(first_p50=st.median(to_first) if to_first else float("nan"),
                   first_p99=pct(to_first, 99), first_stamps=len(to_first))
        return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default=DEFAULT_SIZES, help="runs at once, comma-separated")
    ap.add_argument("--turns", type=int, default=4,
                    help="tool turns of the workload; a run makes turns + 1 model calls")
    ap.add_argument("--latency-ms", type=int, default=2000, help="each model call's latency")
    ap.add_argument("--reps", type=int, default=1, help="rounds of every size")
    ap.add_argument("--concurrency", type=int, default=0,
                    help="HANGO_WORKER_CONCURRENCY (default: unset, the documented 1,000)")
    ap.add_argument("--pool-size", type=int, default=0,
                    help="HANGO_DATABASE_POOL_SIZE (default: unset, the documented 10)")
    ap.add_argument("--processes", type=int, default=0,
                    help="HANGO_WORKER_PROCESSES (default: unset, one per CPU as make worker's "
                         "group starts them)")
    ap.add_argument("--overload", action="store_true",
                    help="one round of 5,000 runs (or --sizes), hango alone: what overload "
                         "left in the workers' log and the wall against the CPU-bound limit")
    ap.add_argument("--senders", type=int, default=2,
                    help="web processes handing the runs over at once (make serve runs two "
                         "gunicorn workers); 1: one after another")
    ap.add_argument("--db", default=os.environ.get("BENCH_CONCURRENCY_DATABASE_URL", DEFAULT_DB))
    ap.add_argument("--broker", default=os.environ.get("BENCH_BROKER_URL", DEFAULT_BROKER),
                    help="a Redis database of the benchmark's own (its run queue is emptied)")
    ap.add_argument("--peer", help="the python of a venv with the peer packages: run them too")
    ap.add_argument("--peers", default=",".join(PEERS))
    ap.add_argument("--fairness", type=int, default=0, metavar="BACKLOG",
                    help="instead: BACKLOG runs of one tenant queued on a worker of "
                         "--concurrency (default 1000) slots, then another tenant's run: how "
                         "soon that one starts")
    ap.add_argument("--json", help="write the raw results here")
    a = ap.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")]
    if a.fairness:
        hango = Hango(a.db, a.broker, a.turns, a.latency_ms, a.concurrency, a.pool_size,
                      a.processes, a.senders)
        row = hango.fairness(a.fairness)
        print(f"{row['backlog']} runs of one tenant on {hango.slots()} slots, then another "
              f"tenant's run: its "
              f"first model call {row['newcomer_first']:.2f} s after it was sent (target <= "
              f"2 s: {'yes' if row['newcomer_first'] <= 2 else 'NO'}); by then "
              f"{row['backlog_started']} of the backlog had started, their first call p50 "
              f"{row['backlog_first_p50']:.2f} s, max {row['backlog_first_max']:.2f} s")
        return
    if a.overload:
        sizes, a.peer = ([5000] if a.sizes == DEFAULT_SIZES else sizes), None
    hango = Hango(a.db, a.broker, a.turns, a.latency_ms, a.concurrency, a.pool_size,
                  a.processes, a.senders)
    results: list[dict] = []
    for rep in range(a.reps):
        for n in sizes:
            # ours and the peers' alternate; each gets the machine alone
            order = ["hango", *(a.peers.split(",") if a.peer else [])]
            order = order[rep % len(order):] + order[:rep % len(order)]
            for system in order:
                if system == "hango":
                    row = hango.round(n)
                    row["config"] = f"hango/{hango.slots()}/{a.senders} senders"
                else:
                    row = run_peer(a.peer, system, n, a.turns, a.latency_ms)
                if row is not None:
                    row.update(system=system, n=n, rep=rep)
                    results.append(row)
                print(f"rep {rep + 1}/{a.reps} n={n} {system} done", file=sys.stderr,
                      flush=True)
    report(a, results)
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
