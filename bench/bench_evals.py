"""An eval run of many cases on real workers: the time from its start to its last case graded,
against the slowest of its cases' own time (a case's runs, queue to end), in the same run. The
cases run concurrently when the ratio stays near 1; run one after another, it would be about
the number of cases. Prints figures only; how to run it: README.md.

The workers are ``make worker``'s group at its documented defaults
(``python -m hango_project.worker_group``), started and stopped here; each case is the shared
workload (``scripted:workload-<T>``), the eval run started with its service
(``evals.execution.eval_run_start``) as ``POST /v1/eval-runs`` starts it.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.databases import ensure_database  # noqa: E402
from tests.support.servers import stop_group  # noqa: E402

DEFAULT_DB = "postgres://postgres@127.0.0.1:5432/hango_bench_evals"
DEFAULT_BROKER = "redis://127.0.0.1:6379/11"


def setup(db: str, broker: str, delay_ms: int) -> dict[str, str]:
    ensure_database(db)
    env = {"DATABASE_URL": db, "CELERY_BROKER_URL": broker, "HANGO_RUN_INLINE": "0",
           "HANGO_SCRIPTED_DELAY_MS": str(delay_ms)}
    os.environ.update(env)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hango_project.settings")
    import django

    django.setup()
    import redis
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    redis.Redis.from_url(broker).flushdb()
    return env


def start_workers(env: dict[str, str]) -> tuple[subprocess.Popen, str]:
    log = tempfile.NamedTemporaryFile("w+", prefix="bench-evals-", suffix=".log", delete=False)
    worker = subprocess.Popen([sys.executable, "-m", "hango_project.worker_group",
                               "--loglevel", "INFO"], cwd=ROOT, env={**os.environ, **env},
                              stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    from hango_project.config import from_environment

    processes = from_environment().worker_processes or len(os.sched_getaffinity(0))
    deadline = time.monotonic() + 90
    while Path(log.name).read_text().count(" ready.") < processes:
        if worker.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"worker did not start:\n{Path(log.name).read_text()}")
        time.sleep(0.1)
    return worker, log.name


def measure(cases: int, turns: int) -> dict[str, float]:
    from accounts.services import tenant_bootstrap
    from agents.services import agent_create
    from evals import services
    from evals.execution import eval_run_start
    from evals.models import EvalRun
    from evals.tasks import start_cases

    member = tenant_bootstrap(tenant_name=f"bench-evals-{time.time_ns()}",
                              email="bench@evals.test").api_key.member
    agent = agent_create(member=member, data={"name": "bench", "config": {
        "max_turns": turns + 1}, "model": f"scripted:workload-{turns}"})
    suite = services.suite_create(member=member, data={"name": "bench"})
    for i in range(cases):
        services.case_create(suite=suite, actor=member, data={
            "name": f"case {i}", "turns": ["Run the benchmark task."],
            "graders": [{"type": "contains", "value": f"All {turns} steps done."}]})
    started = time.perf_counter()
    eval_run = eval_run_start(member=member, suite=suite, agent=agent, version=None,
                              overrides=[])
    start_cases(eval_run)
    posted = time.perf_counter() - started
    while EvalRun.objects.filter(pk=eval_run.pk, status="running").exists():
        time.sleep(0.05)
    wall = time.perf_counter() - started
    results = list(eval_run.results.all())
    slowest = max((r.latency_ms or 0) for r in results) / 1000
    return {"wall": wall, "slowest": slowest, "posted": posted,
            "passed": sum(r.passed for r in results), "cases": len(results)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=100)
    parser.add_argument("--turns", type=int, default=6, help="Model turns per case.")
    parser.add_argument("--delay-ms", type=int, default=200,
                        help="Each scripted model call's delay (a model's latency).")
    parser.add_argument("--db", default=DEFAULT_DB)
    parser.add_argument("--broker", default=DEFAULT_BROKER)
    args = parser.parse_args()
    env = setup(args.db, args.broker, args.delay_ms)
    worker, log = start_workers(env)
    try:
        m = measure(args.cases, args.turns)
    finally:
        stop_group(worker, timeout=30)
    load = os.getloadavg()[0]
    print(f"eval of {m['cases']} cases ({args.turns} turns, {args.delay_ms} ms a call): "
          f"{m['passed']} passed")
    print(f"  start to last grade {m['wall']:.2f} s · slowest case {m['slowest']:.2f} s · "
          f"ratio {m['wall'] / m['slowest']:.2f} (target ≤ 1.5) · start (every case's "
          f"session made, its first post sent to the workers) {m['posted']:.2f} s · "
          f"load {load:.1f} · worker log {log}")


if __name__ == "__main__":
    main()
