"""Leases under load: live workers' runs taken over, with the code before the lease change and
after it, in one invocation. Prints figures; how to run it and what was measured: README.md.

For each tree (``before``: the commit before ``runs/execution/renewer.py`` came, checked out in a
temporary worktree; ``after``: this checkout) it starts the workers as ``make worker`` does —
one ``celery worker --pool gevent`` per core, its defaults (1,000 runs at once, 10 database
connections) — with ``HANGO_RUN_LEASE_SECONDS=6``, on hango's app with the benchmark's model
(``bench/leases_app.py``: each call keeps the CPU ``--hog-ms`` without yielding, then waits
``--call-seconds``). CPU hogs (``while True: pass`` processes) are added and removed to hold the
machine's run queue near ``--load``. ``--runs`` runs are posted at once (the service a post
calls, ``runs.intake.services.message_post``, which hands each task to the broker) and followed
until every one has ended. No worker is killed or stopped: every take-over is of a live worker.

Counted per tree: slices that ended fenced (a live worker found its run taken over), runs
claimed more than once, and — after, where they exist — ``run.lease_taken_over`` events.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics as st
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.databases import ensure_database  # noqa: E402
from tests.support.servers import stop_group  # noqa: E402

DEFAULT_DB = "postgres://postgres@127.0.0.1:5432/hango_bench_leases"
DEFAULT_BROKER = "redis://127.0.0.1:6379/14"
PROMPT = "Run the benchmark task."
ENDED = ("completed", "failed", "cancelled")


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--db", default=os.environ.get("BENCH_LEASES_DATABASE_URL", DEFAULT_DB))
    ap.add_argument("--broker", default=os.environ.get("BENCH_BROKER_URL", DEFAULT_BROKER),
                    help="a Redis database of the benchmark's own (its queue keys are deleted)")
    ap.add_argument("--runs", type=int, default=400)
    ap.add_argument("--turns", type=int, default=4, help="tool turns a run (calls: one more)")
    ap.add_argument("--call-seconds", type=float, default=8.0, help="each model call's wait")
    ap.add_argument("--hog-ms", type=int, default=40,
                    help="CPU each model call keeps without yielding")
    ap.add_argument("--load", type=float, default=10.0, help="the run queue to hold")
    ap.add_argument("--lease", type=float, default=6.0, help="HANGO_RUN_LEASE_SECONDS")
    ap.add_argument("--workers", type=int, default=len(os.sched_getaffinity(0)),
                    help="worker processes (make worker: one per core)")
    ap.add_argument("--before", help="the code before (a git revision; default: the parent "
                                     "of the commit that added runs/execution/renewer.py)")
    ap.add_argument("--only", choices=["before", "after"], help="one tree only")
    return ap.parse_args()


class Load:
    """CPU hogs added and removed so that the machine's run queue (``/proc/loadavg``'s running
    count, every other process's included) stays near ``target``; its samples."""

    def __init__(self, target: float) -> None:
        self.target = target
        self.samples: list[float] = []
        self._hogs: list[subprocess.Popen[bytes]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Load:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        for hog in self._hogs:
            hog.kill()
            hog.wait()

    def reset(self) -> None:
        self.samples = []

    def _run(self) -> None:
        level = _running()
        while not self._stop.wait(0.25):
            now = _running() - 1  # this sampler
            self.samples.append(now)
            level = 0.9 * level + 0.1 * now
            if len(self.samples) % 8:  # adjust every 2 s
                continue
            if level < self.target - 0.5:
                self._hogs.append(subprocess.Popen([sys.executable, "-c", "while True: pass"]))
            elif level > self.target + 0.5 and self._hogs:
                hog = self._hogs.pop()
                hog.kill()
                hog.wait()


def _running() -> float:
    return float(Path("/proc/loadavg").read_text().split()[3].split("/")[0])


@dataclass
class Trial:
    tree: str
    seconds: float = 0.0
    load: list[float] = field(default_factory=list)
    loadavg: float = 0.0
    runs: dict[str, int] = field(default_factory=dict)  # by status
    fenced: int = 0  # slices that ended fenced
    yielded: int = 0
    reclaimed: int = 0  # runs claimed more than once
    events: dict[str, int] | None = None  # run.lease_taken_over, by who took over
    of_live: int | None = None  # events whose holder was a worker still running
    alive: bool = True  # every worker process still running at the end
    logs: str = ""


def before_tree(rev: str | None) -> tuple[str, Path]:
    if rev is None:
        added = subprocess.run(["git", "log", "--diff-filter=A", "--format=%H", "--",
                                "runs/execution/renewer.py"], cwd=ROOT, capture_output=True,
                               text=True, check=True).stdout.split()
        if not added:
            raise SystemExit("runs/execution/renewer.py has no history here: name --before")
        rev = f"{added[-1]}^"
    path = Path(tempfile.mkdtemp(prefix="hango-leases-before-"))
    subprocess.run(["git", "worktree", "add", "--detach", str(path), rev], cwd=ROOT,
                   check=True, capture_output=True)
    return rev, path


class Bench:
    def __init__(self, a: argparse.Namespace) -> None:
        self.a = a
        ensure_database(a.db)
        os.environ.update({"DATABASE_URL": a.db, "CELERY_BROKER_URL": a.broker,
                           "HANGO_RUN_INLINE": "0",
                           "DJANGO_SETTINGS_MODULE": "hango_project.settings"})
        import django

        django.setup()
        import redis
        from django.core.management import call_command

        from accounts.services import tenant_bootstrap

        call_command("migrate", verbosity=0)
        self.redis = redis.Redis.from_url(a.broker)
        self.member = tenant_bootstrap(tenant_name=f"bench-leases-{os.getpid()}",
                                       email=f"bench{os.getpid()}@leases.test").api_key.member

    def trial(self, tree: str, path: Path, load: Load) -> Trial:
        from agents.services import agent_create
        from runs.intake import services

        a = self.a
        self.redis.delete("runs", "unacked", "unacked_index")
        agent = agent_create(member=self.member, data={
            "name": f"leases-{tree}-{time.time():.0f}", "model": f"scripted:hog-{a.turns}",
            "config": {"max_turns": a.turns + 1}})
        logs = Path(tempfile.mkdtemp(prefix=f"bench-leases-{tree}-"))
        workers = [self._worker(k, path, logs) for k in range(1, a.workers + 1)]
        trial = Trial(tree, logs=str(logs))
        try:
            self._wait_ready(logs, a.workers)
            load.reset()
            started = time.monotonic()
            ids = []
            for _ in range(a.runs):
                session = services.session_create(member=self.member, agent=agent)
                ids.append(services.message_post(session=session, content=PROMPT)[1].pk)
            trial.runs = self._wait_ended(ids)
            trial.seconds = time.monotonic() - started
            trial.load, trial.loadavg = list(load.samples), os.getloadavg()[0]
            trial.alive = all(w.poll() is None for w in workers)
            self._count(trial, ids, [w.pid for w in workers], logs)
        finally:
            for w in workers:
                stop_group(w, timeout=30)
        return trial

    def _worker(self, k: int, path: Path, logs: Path) -> subprocess.Popen[bytes]:
        a = self.a
        env = {**os.environ, "PYTHONPATH": str(ROOT / "bench"), "PYTHONUNBUFFERED": "1",
               "HANGO_RUN_LEASE_SECONDS": str(a.lease),
               "HANGO_SCRIPTED_DELAY_MS": str(round(a.call_seconds * 1000)),
               "BENCH_HOG_MS": str(a.hog_ms), "BENCH_HOG_TURNS": str(a.turns)}
        cmd = [sys.executable, "-m", "celery", "-A", "leases_app", "worker", "--pool", "gevent",
               "--hostname", f"w{k}@%h", "--loglevel", "INFO"]  # make worker's command
        out = open(logs / f"w{k}.log", "w")  # noqa: SIM115 (the child holds it)
        return subprocess.Popen(cmd, cwd=path, env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)

    def _wait_ready(self, logs: Path, n: int) -> None:
        deadline = time.monotonic() + 120
        while sum(" ready." in p.read_text() for p in logs.glob("w*.log")) < n:
            if time.monotonic() > deadline:
                raise SystemExit(f"workers did not start: {logs}")
            time.sleep(0.2)

    def _wait_ended(self, ids: list[object]) -> dict[str, int]:
        from django.db.models import Count

        from runs.models import Run

        deadline = time.monotonic() + 1800
        while True:
            by = dict(Run.objects.filter(pk__in=ids).values_list("status")
                      .annotate(n=Count("id")).values_list("status", "n"))
            if sum(by.get(s, 0) for s in ENDED) == len(ids) or time.monotonic() > deadline:
                return by
            time.sleep(1)

    def _count(self, trial: Trial, ids: list[object], pids: list[int], logs: Path) -> None:
        from django.db.models import Count

        from runs.models import Run, RunEvent

        results = "".join(p.read_text() for p in logs.glob("w*.log"))
        outcomes = re.findall(r"runs\.execute_run\[[^\]]+\] succeeded in [\d.]+s: '(\w+)'",
                              results)
        trial.fenced, trial.yielded = outcomes.count("fenced"), outcomes.count("yielded")
        trial.reclaimed = Run.objects.filter(pk__in=ids, epoch__gt=1).count()
        events = RunEvent.objects.filter(run_id__in=ids, type="run.lease_taken_over")
        if trial.tree == "after":
            trial.events = dict(events.values_list("data__by").annotate(n=Count("seq"))
                                .values_list("data__by", "n"))
            holders = [e.split(":")[1] for e in events.values_list("data__from_worker", flat=True)]
            trial.of_live = sum(int(pid) in pids for pid in holders) if trial.alive else None


def report(a: argparse.Namespace, rev: str, trials: list[Trial]) -> None:
    print(f"hango lease benchmark  {time.strftime('%Y-%m-%d %H:%M:%S')}  cpus "
          f"{len(os.sched_getaffinity(0))}  {a.workers} gevent workers (make worker's "
          f"defaults)  lease {a.lease:g} s")
    print(f"{a.runs} runs posted at once, {a.turns + 1} model calls each: {a.hog_ms} ms of CPU "
          f"without yielding, then {a.call_seconds:g} s of waiting; CPU hogs hold the run "
          f"queue near {a.load:g}; before = {rev}")
    print(f"\n{'tree':<7}{'load mean (p10-p90)':>21}{'1-min':>7}{'s':>6}{'ended':>7}"
          f"{'fenced':>8}{'claimed >1':>12}{'take-over events':>24}")
    for t in trials:
        load = (f"{st.mean(t.load):.1f} ({_pct(t.load, 10):.0f}-{_pct(t.load, 90):.0f})"
                if t.load else "-")
        ended = sum(t.runs.get(s, 0) for s in ENDED)
        events = ("-" if t.events is None else
                  f"{sum(t.events.values())} ({', '.join(f'{k} {v}' for k, v in t.events.items())})"
                  if t.events else "0")
        print(f"{t.tree:<7}{load:>21}{t.loadavg:>7.1f}{t.seconds:>6.0f}{ended:>7}"
              f"{t.fenced:>8}{t.reclaimed:>12}{events:>24}")
    for t in trials:
        print(f"  {t.tree}: statuses {t.runs}; yielded slices {t.yielded}; workers alive at the "
              f"end: {'all' if t.alive else 'NOT ALL'}; logs {t.logs}")
    after = next((t for t in trials if t.tree == "after"), None)
    if after is not None:
        live = after.fenced + (after.of_live or 0)
        print(f"\ntarget: 0 take-overs of live workers over {a.runs} runs after: "
              f"{'yes' if live == 0 and after.reclaimed == 0 else 'NO'}")


def _pct(xs: list[float], q: int) -> float:
    ys = sorted(xs)
    return ys[min(len(ys) - 1, int(len(ys) * q / 100))]


def main() -> None:
    a = parse_args()
    bench = Bench(a)
    rev, before = before_tree(a.before) if a.only != "after" else ("-", ROOT)
    trials = []
    try:
        with Load(a.load) as load:
            time.sleep(10)  # the hogs find their level
            for tree, path in (("before", before), ("after", ROOT)):
                if a.only in (None, tree):
                    trials.append(bench.trial(tree, path, load))
                    print(f"{tree} done", file=sys.stderr, flush=True)
    finally:
        if before != ROOT:
            subprocess.run(["git", "worktree", "remove", "--force", str(before)], cwd=ROOT,
                           check=False, capture_output=True)
    report(a, rev, trials)


if __name__ == "__main__":
    main()
