"""The fault suite: jobs through hango's real stack while workers die, stall and get duplicate
tasks and Redis and PostgreSQL restart; then the database is checked. Prints figures and exits
non-zero when a target is missed. How to run it and what it checks: README.md.

It starts everything it uses, privately, and tears it all down at the end (also on an error or
Ctrl-C): PostgreSQL and Redis on free ports in a temporary directory, the web app under
gunicorn, N Celery workers (as make worker starts them: the gevent pool, each running the
reconciler), with short lease and reconcile settings. Under gevent a worker is one process, so
killing "the process holding a run" kills the worker and every run it holds: ``kill_child``
applies to the prefork pool alone (``--pool prefork``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import secrets
import shutil
import signal
import statistics as st
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.faults_stack import Postgres, Redis, Web, Worker, wait_until  # noqa: E402

PLAN_DEFAULTS = {"kill_child": 4, "kill_main": 2, "stall_cancel": 2, "stall_approval": 2,
                 "duplicate": 4, "redis_restart": 1, "pg_restart": 1}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=50, help="runs at least (default 50)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workers", type=int, default=3, help="Celery workers")
    ap.add_argument("--pool", choices=["gevent", "prefork"], default="gevent",
                    help="their pool (default gevent, as make worker)")
    ap.add_argument("--concurrency", type=int, default=2,
                    help="runs at once per worker (gevent), or its pool processes (prefork)")
    ap.add_argument("--active", type=int, default=0,
                    help="jobs kept active at once (default: workers x concurrency)")
    ap.add_argument("--steps", default="6-12", help="steps per job, a range (default 6-12)")
    ap.add_argument("--delay-ms", type=int, default=400, help="scripted model time per call")
    ap.add_argument("--approval-share", type=float, default=0.3,
                    help="share of jobs whose agent needs approval for word_count")
    ap.add_argument("--lease", type=float, default=3.0, help="HANGO_RUN_LEASE_SECONDS")
    ap.add_argument("--reconcile", type=int, default=2, help="HANGO_RECONCILE_SECONDS")
    ap.add_argument("--grace", type=int, default=3, help="HANGO_RECONCILE_GRACE_SECONDS")
    ap.add_argument("--outage", type=float, default=3.0, help="seconds Redis/PostgreSQL stay down")
    for kind, n in PLAN_DEFAULTS.items():
        ap.add_argument(f"--{kind.replace('_', '-')}", type=int, default=None, dest=kind,
                        help=f"how many {kind} faults (default {n}; kill_child 0 under gevent)")
    ap.add_argument("--timeout", type=float, default=900, help="give up after this many seconds")
    ap.add_argument("--json", type=Path, help="write every figure and problem to this file")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory (logs)")
    args = ap.parse_args(argv)
    args.active = args.active or args.workers * args.concurrency
    for kind, n in PLAN_DEFAULTS.items():
        if getattr(args, kind) is None:
            setattr(args, kind, 0 if kind == "kill_child" and args.pool == "gevent" else n)
    if args.pool == "gevent" and args.kill_child:
        ap.error("--kill-child needs --pool prefork: a gevent worker has no pool processes")
    return args


class Stack:
    """The private services and hango's processes; :meth:`close` tears everything down."""

    def __init__(self, args: argparse.Namespace, root: Path, undo: ExitStack) -> None:
        self.args, self.root, self.undo = args, root, undo
        self.pg = Postgres(root)
        undo.callback(self.pg.stop, "immediate")
        self.redis = Redis(root)
        undo.callback(lambda: self.redis.stop())
        var = root / "var"
        var.mkdir()
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("HANGO_", "OTEL_"))},
            "DJANGO_SETTINGS_MODULE": "hango_project.settings", "DATABASE_URL": self.pg.url,
            "CELERY_BROKER_URL": self.redis.url, "DJANGO_SECRET_KEY": secrets.token_urlsafe(40),
            "HANGO_VAR_DIR": str(var), "HANGO_RUN_INLINE": "0",
            "HANGO_RUN_LEASE_SECONDS": str(args.lease),
            "HANGO_RECONCILE_SECONDS": str(args.reconcile),
            "HANGO_RECONCILE_GRACE_SECONDS": str(args.grace),
            "HANGO_SCRIPTED_DELAY_MS": str(args.delay_ms),
            # One member's key drives the whole load: the limit stays on (its counter in the
            # private Redis, so a Redis restart reaches it) but high enough not to refuse.
            "HANGO_RATE_LIMIT_PER_MINUTE": "1000000",
        }
        self.manage("migrate", "--noinput")
        self.manage("hango_bootstrap", "--tenant", "faults", "--email", "owner@faults.test")
        self.key = self.manage("hango_create_key", "--tenant", "faults", "--email",
                               "member@faults.test", "--role", "member").strip().splitlines()[-1]
        self.web = Web(env=self.env, log_dir=root)
        undo.callback(self.web.stop)
        self.workers: list[Worker] = []
        undo.callback(self._stop_workers)
        for _ in range(args.workers):
            self.workers.append(self.add_worker())
        for worker in self.workers:
            worker.wait_ready()
        wait_until(self._web_up, timeout=60, what="the web app", every=0.2)

    def manage(self, *argv: str) -> str:
        done = subprocess.run([sys.executable, "manage.py", *argv], cwd=ROOT, env=self.env,
                              capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"manage.py {argv[0]} failed:\n{done.stderr[-2000:]}")
        return done.stdout

    def add_worker(self) -> Worker:
        return Worker(f"w{len(self.workers) + 1}", env=self.env, log_dir=self.root,
                      concurrency=self.args.concurrency, pool=self.args.pool)

    def _stop_workers(self) -> None:
        for worker in self.workers:
            worker.stop()

    def _web_up(self) -> bool:
        import httpx

        try:
            return httpx.get(f"{self.web.url}/healthz", timeout=2).status_code == 200
        except httpx.TransportError:
            return False


def setup_django(stack: Stack) -> None:
    """This process reads the private database (checks) and publishes to the private Redis."""
    for key in [k for k in os.environ if k.startswith("HANGO_")]:
        del os.environ[key]
    os.environ.update(stack.env)
    import logging

    import django

    django.setup()
    logging.getLogger("httpx").setLevel(logging.WARNING)  # not a line per request


def make_plan(args: argparse.Namespace, rng: random.Random) -> list[str]:
    plan = [kind for kind in PLAN_DEFAULTS for _ in range(getattr(args, kind))]
    rng.shuffle(plan)
    return plan


def run_suite(args: argparse.Namespace, stack: Stack) -> dict[str, Any]:
    from bench.faults_inject import Injector
    from bench.faults_load import Api, Driver

    rng = random.Random(args.seed)
    low, _, high = args.steps.partition("-")
    api = Api(stack.web.url, stack.key)
    driver = Driver(api=api, rng=random.Random(rng.random()), runs=args.runs,
                    active=args.active,
                    steps=(int(low), int(high or low)), approval_share=args.approval_share)
    driver.create_agents()
    injector = Injector(api=api, driver=driver, rng=random.Random(rng.random()),
                        workers=stack.workers, add_worker=stack.add_worker, redis=stack.redis,
                        pg=stack.pg, lease=args.lease, reconcile=args.reconcile,
                        outage=args.outage, plan=make_plan(args, rng))
    thread = threading.Thread(target=injector.run, name="injector", daemon=True)
    started = time.monotonic()
    thread.start()
    try:
        ended = driver.drive(timeout=args.timeout)
    finally:
        injector.stop.set()
        driver.stop.set()
        thread.join(timeout=60)
        for worker in stack.workers:  # nothing stays stopped, whatever happened
            worker.resume()
    time.sleep(2 * args.lease)  # let any stale worker do what it still would
    return {"driver": driver, "injector": injector, "ended": ended,
            "seconds": time.monotonic() - started}


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered) + 0.5) - 1))]


def figures(args: argparse.Namespace, outcome: dict[str, Any]) -> dict[str, Any]:
    from django.db import connection

    from bench.faults_check import check, recoveries

    driver, injector = outcome["driver"], outcome["injector"]
    connection.close()
    sessions = sorted({job.session for job in driver.jobs})
    report = check(sessions, cancels=injector.cancels, killed_pids=injector.killed_pids)
    rec = recoveries(injector.faults)
    seconds = [s for _, _, s in rec if s is not None]
    outside = [e for e in driver.api.errors
               if not any(a <= e.at <= b for a, b in injector.pg_outages)]
    bound = args.lease + args.reconcile + 5
    return {
        "runs": len(report.runs), "survived": report.survived,
        "not_survived": [vars(r) for r in report.runs if not r.survived],
        "duplicates": report.count("duplicate"), "losses": report.count("loss"),
        "writes_after_cancel": report.count("write_after_cancel"),
        "fenced_writes": report.count("fenced_write"),
        "inconsistent": report.count("inconsistent"), "not_terminal": report.count("not_terminal"),
        "recovery_p50": st.median(seconds) if seconds else None,
        "recovery_max": max(seconds) if seconds else None, "recovery_bound": bound,
        "recovery_p90": _percentile(seconds, 0.9) if seconds else None,
        "no_recovery": [(f.kind, run) for f, run, s in rec if s is None],
        "recoveries": sorted(({"fault": f.kind, "at": f.at.isoformat(), "detail": f.detail,
                               "run": run, "seconds": s} for f, run, s in rec if s is not None),
                             key=lambda r: -r["seconds"]),
        "faults": {k: sum(1 for f in injector.faults if f.kind == k) for k in PLAN_DEFAULTS},
        "recovery_by_fault": {k: max((s for f, _, s in rec if f.kind == k and s is not None),
                                     default=None) for k in PLAN_DEFAULTS},
        "skipped": injector.skipped, "cancels": len(injector.cancels),
        "cancels_at_once": sum(1 for c in injector.cancels if c.answered_status == "cancelled"),
        "approvals": driver.approvals, "orphans": injector.orphans,
        "server_errors": [(e.method, e.route, e.status) for e in outside],
        "server_errors_in_pg_outage": len(driver.api.errors) - len(outside),
        # While PostgreSQL is down the API answers 503 database_unavailable, never a 500.
        "internal_errors": [(e.method, e.route) for e in driver.api.errors if e.status == 500],
        "problems": [vars(p) for p in report.problems], "ended": outcome["ended"],
        "error": repr(injector.error) if injector.error else None,
        "seconds": round(outcome["seconds"], 1),
        "settings": {k: getattr(args, k) for k in (
            "seed", "runs", "workers", "pool", "concurrency", "active", "steps", "delay_ms",
            "lease", "reconcile", "grace", "outage")},
    }


def targets(f: dict[str, Any]) -> list[tuple[str, bool]]:
    return [
        ("every run survived", f["survived"] == f["runs"] and f["ended"]),
        ("no duplicate", f["duplicates"] == 0), ("no loss", f["losses"] == 0),
        ("no write after cancel", f["writes_after_cancel"] == 0),
        ("no write by a fenced worker", f["fenced_writes"] == 0),
        ("consistent, every run terminal", f["inconsistent"] == 0 and f["not_terminal"] == 0),
        (f"recovery max <= lease + reconcile + 5 s = {f['recovery_bound']:.0f} s",
         f["recovery_max"] is not None and f["recovery_max"] <= f["recovery_bound"]),
        ("no 5xx answer outside a PostgreSQL outage", not f["server_errors"]),
        ("no 500 answer, in an outage either (503 there)", not f["internal_errors"]),
        ("no process outlives its killed worker", not f["orphans"]),
        ("every planned fault injected", not f["skipped"] and f["error"] is None),
    ]


def show(f: dict[str, Any], results: list[tuple[str, bool]]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()

    def secs(v: float | None) -> str:
        return "–" if v is None else f"{v:.1f} s"

    console.print(f"settings: {f['settings']}", markup=False)
    summary = Table(title=f"fault suite ({f['seconds']:.0f} s)", show_header=False)
    for name, value in [
        ("runs survived / total", f"{f['survived']} / {f['runs']}"),
        ("duplicates", f["duplicates"]), ("losses", f["losses"]),
        ("writes after cancel", f["writes_after_cancel"]),
        ("writes by fenced workers", f["fenced_writes"]),
        ("inconsistent / not terminal", f"{f['inconsistent']} / {f['not_terminal']}"),
        ("recovery p50 / p90 / max", f"{secs(f['recovery_p50'])} / {secs(f['recovery_p90'])}"
                                     f" / {secs(f['recovery_max'])}"),
        ("runs with no turn after their fault", len(f["no_recovery"])),
        ("cancels (took effect at once)", f"{f['cancels']} ({f['cancels_at_once']})"),
        ("approvals", f["approvals"]),
        ("5xx answers (outside / in PostgreSQL outages)",
         f"{len(f['server_errors'])} / {f['server_errors_in_pg_outage']}"),
        ("500 answers (anywhere)", len(f["internal_errors"])),
        ("processes outliving their killed worker", len(f["orphans"])),
    ]:
        summary.add_row(name, str(value))
    console.print(summary)
    per_fault = Table(title="per fault")
    for column in ("fault", "count", "recovery max"):
        per_fault.add_column(column)
    for kind, n in f["faults"].items():
        per_fault.add_row(kind, str(n), secs(f["recovery_by_fault"][kind]))
    console.print(per_fault)
    for r in f["recoveries"][:5]:
        console.print(f"  slowest recovery: {r['seconds']:.1f} s after {r['fault']} "
                      f"({r['detail']}), run {r['run']}", markup=False)
    for p in f["problems"][:40]:
        console.print(f"  {p['kind']}: run {p['run']} — {p['detail']}", markup=False)
    for r in f["not_survived"][:20]:
        console.print(f"  not survived: run {r['run']} {r['status']} {r['error']}", markup=False)
    for e in f["server_errors"][:10]:
        console.print(f"  5xx: {e}", markup=False)
    for o in f["orphans"]:
        console.print(f"  outlived its killed worker: {o}", markup=False)
    if f["error"]:
        console.print(f"  injector error: {f['error']}", markup=False)
    for name, ok in results:
        console.print(f"{'PASS' if ok else 'MISS'}  {name}", markup=False)


def _interrupted(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # SIGTERM tears the stack down as Ctrl-C does


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _interrupted)
    root = Path(tempfile.mkdtemp(prefix="hango-faults-"))
    with ExitStack() as undo:
        if not args.keep:
            undo.callback(shutil.rmtree, root, ignore_errors=True)
        else:
            print(f"logs and data in {root}", file=sys.stderr)
        stack = Stack(args, root, undo)
        setup_django(stack)
        outcome = run_suite(args, stack)
        stack._stop_workers()  # nothing writes while the database is read
        f = figures(args, outcome)
    results = targets(f)
    show(f, results)
    if args.json:
        args.json.write_text(json.dumps(f, indent=2, default=str))
    return 0 if all(ok for _, ok in results) else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("interrupted: everything the suite started is stopped", file=sys.stderr)
        sys.exit(130)
