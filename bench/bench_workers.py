"""Real Celery workers on Redis and PostgreSQL: a run's fixed cost before its first model call,
and turns per second with many runs at once. Prints figures only; how to run it: README.md.

The workers are ``make worker``'s group at its documented defaults
(``python -m hango_project.worker_group``: a gevent process per CPU), importing
:mod:`bench.worker_app` (``-I``) for its stamps, started and stopped here; the runs are the
shared workload (``scripted:workload-<T>``), queued with the service that makes them
(``runs.intake.services.message_post``) and handed to the workers as hango hands them over (the
``runs.execute_run`` task).
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

from bench.databases import ensure_database  # noqa: E402
from bench.sampling import pct  # noqa: E402
from tests.support.servers import stop_group  # noqa: E402

DEFAULT_DB = "postgres://postgres@127.0.0.1:5432/hango_bench_workers"
DEFAULT_BROKER = "redis://127.0.0.1:6379/10"
STAMPS_KEY = "bench:stamps"
PROMPT = "Run the benchmark task."
PEER_SCRIPT = ROOT / "bench" / "peer_throughput.py"
TARGET_FIXED_MS, TARGET_TPS = 5.0, 400.0


def med(xs):
    return st.median(xs) if xs else float("nan")



class Bench:
    def __init__(self, db: str, broker: str, turns: set[int]) -> None:
        ensure_database(db)
        self.env = {"DATABASE_URL": db, "CELERY_BROKER_URL": broker, "HANGO_RUN_INLINE": "0",
                    "BENCH_WORKLOAD_TURNS": ",".join(map(str, sorted(turns))),
                    "BENCH_STAMPS_KEY": STAMPS_KEY}
        os.environ.update(self.env)
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hango_project.settings")
        import django

        django.setup()
        import redis
        from django.core.management import call_command
        from django.db import connection

        from accounts.services import tenant_bootstrap
        from agents.services import agent_create
        from runs.execution import tasks
        from runs.intake import services

        call_command("migrate", verbosity=0)
        self.redis = redis.Redis.from_url(broker)
        self.redis.delete("runs", STAMPS_KEY, "unacked", "unacked_index")
        tasks.enqueue_run = lambda run_id: None  # queued here, handed over by hand below
        self.services, self.task, self.connection = services, tasks.execute_run, connection
        self.member = tenant_bootstrap(tenant_name="bench-workers",
                                       email="bench@workers.test").api_key.member
        self.agents = {T: agent_create(member=self.member, data={
            "name": f"bench-{T}", "model": f"scripted:workload-{T}",
            "config": {"max_turns": T + 1}}) for T in turns}
        self.worker: subprocess.Popen | None = None

    def start(self) -> None:
        log = tempfile.NamedTemporaryFile("w+", prefix="bench-worker-", suffix=".log",
                                          delete=False)
        cmd = [sys.executable, "-m", "hango_project.worker_group", "--loglevel", "INFO",
               "-I", "bench.worker_app"]
        self.worker = subprocess.Popen(cmd, cwd=ROOT, env={**os.environ, **self.env},
                                       stdout=log, stderr=subprocess.STDOUT,
                                       start_new_session=True)
        self.log_path = log.name
        from hango_project.config import from_environment

        processes = from_environment().worker_processes or len(os.sched_getaffinity(0))
        deadline = time.monotonic() + 90
        while Path(self.log_path).read_text().count(" ready.") < processes:
            if self.worker.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"worker did not start:\n{Path(self.log_path).read_text()}")
            time.sleep(0.1)

    def stop(self) -> None:
        if self.worker is not None:
            stop_group(self.worker, timeout=30)

    def processes(self) -> tuple[list[int], list[int]]:
        """The worker group's processes (its front and its workers) and its database backends."""
        assert self.worker is not None
        children = Path(f"/proc/{self.worker.pid}/task/{self.worker.pid}/children")
        workers = [self.worker.pid, *map(int, children.read_text().split())]
        with self.connection.cursor() as cur:
            cur.execute("SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                        "AND pid <> pg_backend_pid()")
            return workers, [pid for (pid,) in cur.fetchall()]

    def queue(self, turns: int, n: int) -> list[str]:
        """n queued runs of the workload (sessions and user messages made; no task sent)."""
        ids = []
        for _ in range(n):
            session = self.services.session_create(member=self.member, agent=self.agents[turns])
            ids.append(str(self.services.message_post(session=session, content=PROMPT)[1].id))
        return ids

    def execute(self, run_ids: list[str]) -> tuple[float, list[dict]]:
        """Send every run's task at once; wait for each task's stamps. Returns the start."""
        started = time.perf_counter()
        for run_id in run_ids:
            self.task.delay(run_id)
        done: dict[str, dict] = {}
        while len(done) < len(run_ids):
            popped = self.redis.blpop([STAMPS_KEY], timeout=120)
            if popped is None:
                raise SystemExit(f"timed out waiting for runs; worker log: {self.log_path}")
            record = json.loads(popped[1])
            if record.get("result") == "skipped":  # a task delivered again for a run done
                continue
            if record.get("result") != "completed":
                raise SystemExit(f"a run did not complete: {record}")
            done[record["args"][0]] = record
        records = [done[run_id] for run_id in run_ids]
        return started, records


def fixed_costs(bench: Bench, reps: int) -> list[dict]:
    """One run at a time: each run's phases before its first model call, in the worker."""
    out = []
    for _ in range(reps):
        _, (r,) = bench.execute(bench.queue(2, 1))
        out.append({"pre": r["enter"][0] - r["start"], "task": r["claimed_from"] - r["start"],
                    "claim": r["claimed"] - r["claimed_from"],
                    "build": r["built"] - r["claimed"], "first_call": r["enter"][0] - r["built"]})
    return out


def _cpu_seconds(pids: list[int]) -> float:
    """utime + stime of the processes (clock ticks of /proc/<pid>/stat)."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def throughput(bench: Bench, runs: int, turns: int) -> dict:
    queued = bench.queue(turns, runs)
    workers, backends = bench.processes()
    cpu = _cpu_seconds(workers), _cpu_seconds(backends)
    started, records = bench.execute(queued)
    cpu = _cpu_seconds(workers) - cpu[0], _cpu_seconds(backends) - cpu[1]
    end = max(r["end"] for r in records)
    lat = [r["enter"][k] - r["exit"][k - 1] for r in records for k in range(1, len(r["enter"]))]
    c2c = [r["enter"][k] - r["enter"][k - 1] for r in records for k in range(1, len(r["enter"]))]
    n = sum(len(r["enter"]) - 1 for r in records)
    return {"turns": n, "seconds": end - started, "tps": n / (end - started),
            "worker_cpu_ms": 1e3 * cpu[0] / n, "db_cpu_ms": 1e3 * cpu[1] / n,
            "p50": med(lat), "p99": pct(lat, 99), "c2c_p50": med(c2c), "c2c_p99": pct(c2c, 99),
            "pre_p50": med([r["enter"][0] - r["start"] for r in records])}


def run_peer(python: str, concurrency: int, runs: int, turns: int,
             fixed_reps: int) -> dict | None:
    cmd = [python, str(PEER_SCRIPT), "--processes", str(concurrency), "--runs", str(runs),
           "--turns", str(turns), "--fixed-reps", str(fixed_reps)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        print(f"peer run failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}", flush=True)
        return None
    return json.loads(proc.stdout)


def spread(xs, scale=1.0, fmt="{:.1f}") -> str:
    xs = [scale * x for x in xs]
    return (f"{fmt.format(med(xs))} ({fmt.format(min(xs))}–{fmt.format(max(xs))})"
            if xs else "–")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--db", default=os.environ.get("BENCH_WORKERS_DATABASE_URL", DEFAULT_DB))
    ap.add_argument("--broker", default=os.environ.get("BENCH_BROKER_URL", DEFAULT_BROKER),
                    help="a Redis database of the benchmark's own (its keys are deleted)")
    ap.add_argument("--peer-processes", type=int, default=4,
                    help="the peer's processes (hango's worker is make worker's group)")
    ap.add_argument("--runs", type=int, default=50, help="runs at once in a throughput round")
    ap.add_argument("--turns", type=int, default=20, help="T of a throughput round's runs")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--fixed-reps", type=int, default=30, help="single runs for the fixed cost")
    ap.add_argument("--peer", help="the python of a venv with the peer packages: run it too")
    ap.add_argument("--json", help="write the raw results here")
    a = ap.parse_args()
    bench = Bench(a.db, a.broker, {2, a.turns})
    results: dict = {"fixed": [], "rounds": [], "peer": []}
    try:
        bench.start()
        bench.execute(bench.queue(2, 12))  # warm every process
        results["fixed"] = fixed_costs(bench, a.fixed_reps)
        for rnd in range(a.rounds):  # ours and the peer's rounds alternate
            results["rounds"].append(throughput(bench, a.runs, a.turns))
            if a.peer:
                bench.stop()  # the peer gets the machine as ours had it: no idle worker
                fixed_reps = a.fixed_reps if rnd == 0 else 0  # its fixed cost, in round 1
                peer = run_peer(a.peer, a.peer_processes, a.runs, a.turns, fixed_reps)
                if peer is not None:
                    results["peer"].append(peer)
                bench.start()
                bench.execute(bench.queue(2, 12))
            print(f"round {rnd + 1}/{a.rounds} done", file=sys.stderr, flush=True)
    finally:
        bench.stop()
    report(a, results)
    if a.json:
        Path(a.json).write_text(json.dumps(results))


def report(a, results: dict) -> None:
    fixed, rounds, peer = results["fixed"], results["rounds"], results["peer"]
    print(f"hango worker benchmark  {time.strftime('%Y-%m-%d %H:%M:%S')}  cpus {os.cpu_count()}"
          f"  load {os.getloadavg()[0]:.2f}  make worker's group (gevent, the defaults)")
    print(f"\n== fixed cost before the first model call, {len(fixed)} runs one at a time, in the "
          "worker: ms, median (p10–p90) ==")
    for key, label in (("pre", "task start -> first model call"),
                       ("task", "  the task to claim_run"), ("claim", "  claim_run"),
                       ("build", "  build_execution"),
                       ("first_call", "  the loop to its first call")):
        xs = [1e3 * r[key] for r in fixed]
        print(f"{label:<34} {med(xs):7.2f} ({pct(xs, 10):.2f}–{pct(xs, 90):.2f})")
    pre = med([1e3 * r["pre"] for r in fixed])
    print(f"target <= {TARGET_FIXED_MS} ms: {'yes' if pre <= TARGET_FIXED_MS else 'NO'}")
    print(f"\n== {a.runs} runs at once x {a.turns} turns, {len(rounds)} rounds: median (min–max) "
          "over rounds ==")
    print(f"hango  turns/s {spread([r['tps'] for r in rounds], fmt='{:.0f}')}; turn ms p50 "
          f"{spread([r['p50'] for r in rounds], 1e3, '{:.2f}')}, p99 "
          f"{spread([r['p99'] for r in rounds], 1e3, '{:.2f}')}; call->call p50 "
          f"{spread([r['c2c_p50'] for r in rounds], 1e3, '{:.2f}')}, p99 "
          f"{spread([r['c2c_p99'] for r in rounds], 1e3, '{:.2f}')}; pre p50 "
          f"{spread([r['pre_p50'] for r in rounds], 1e3, '{:.2f}')}")
    worker_cpu = spread([r["worker_cpu_ms"] for r in rounds], fmt="{:.2f}")
    db_cpu = spread([r["db_cpu_ms"] for r in rounds], fmt="{:.2f}")
    print(f"       CPU per turn, ms: workers {worker_cpu}, their PostgreSQL backends {db_cpu}")
    tps = med([r["tps"] for r in rounds])
    print(f"target >= {TARGET_TPS:.0f} turns/s: {'yes' if tps >= TARGET_TPS else 'NO'}")
    if peer:
        print(f"peer   turns/s {spread([p['tps'] for p in peer], fmt='{:.0f}')}; call->call p50 "
              f"{spread([p['c2c_p50'] for p in peer], 1e3, '{:.2f}')}, p99 "
              f"{spread([p['c2c_p99'] for p in peer], 1e3, '{:.2f}')}; pre p50 "
              f"{spread([p['pre_p50'] for p in peer], 1e3, '{:.2f}')}  ({peer[0]['config']}, "
              f"{a.peer_processes} processes, the same runs)")
        ptps = med([p["tps"] for p in peer])
        peer_pre = 1e3 * med([x for p in peer for x in p["fixed_pre"]])
        print(f"peer fixed cost, one run at a time in a warm process: invoke -> first model "
              f"call {peer_pre:.2f} ms")
        print(f"hango/peer throughput = {tps / ptps:.1f}x; peer/hango fixed cost = "
              f"{peer_pre / pre:.1f}x")


if __name__ == "__main__":
    main()
