"""Runs started by other services: how many ``hango.send_message`` messages the workers take a
second, and how late 1,000 schedules fire. Prints figures only; how to run it: README.md
("Triggers and schedules").

*Triggers.* N signed messages (each a new session of one agent) are sent through the broker, as
another service would send them, to workers as ``make worker`` starts them (a gevent process
per CPU); the clock runs from the first send to the last answer read back. The agent's model
waits a minute per call, so the runs the messages start hold a greenlet each and no CPU: what
is measured is taking the messages. Sent again with the same idempotency keys, each answers
its first run (``duplicate``), which is timed too.

*Schedules.* S schedules are made due at the same second; each worker's reconciler thread fires
what is due every ``HANGO_SCHEDULE_TICK_SECONDS``. A fire's skew is its ``fired_at`` minus its
fire time: the tick's wait, the queue of fires ahead of it in the same tick, and their
transactions.
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
import uuid
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.databases import ensure_database  # noqa: E402
from bench.faults_stack import wait_until  # noqa: E402
from bench.sampling import pct  # noqa: E402
from tests.support.servers import stop_group  # noqa: E402

DEFAULT_DB = "postgres://postgres@127.0.0.1:5432/hango_bench_triggers"
DEFAULT_BROKER = "redis://127.0.0.1:6379/12"



class Bench:
    def __init__(self, db: str, broker: str, processes: int) -> None:
        ensure_database(db)
        self.env = {"DATABASE_URL": db, "CELERY_BROKER_URL": broker, "HANGO_RUN_INLINE": "0",
                    "HANGO_SCRIPTED_DELAY_MS": "60000", "HANGO_RECONCILE_SECONDS": "3600",
                    "HANGO_WORKER_CONCURRENCY": "5000"}
        os.environ.update(self.env)
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hango_project.settings")
        import django

        django.setup()
        import redis
        from django.core.management import call_command

        from accounts.services import tenant_bootstrap
        from agents.services import agent_create

        call_command("migrate", verbosity=0)
        self.redis = redis.Redis.from_url(broker)
        issued = tenant_bootstrap(tenant_name=f"bench-triggers-{time.time_ns()}",
                                  email=f"bench-{time.time_ns()}@triggers.test")
        self.member, self.key = issued.api_key.member, issued.plaintext
        self.agent = agent_create(member=self.member, data={"name": "waits",
                                                            "model": "scripted:demo"})
        self.processes = processes
        self.workers: list[subprocess.Popen] = []

    def start(self) -> None:
        self.redis.flushdb()
        logs = []
        for k in range(self.processes):
            log = tempfile.NamedTemporaryFile("w+", prefix=f"bench-triggers-{k}-", suffix=".log",
                                              delete=False)
            self.workers.append(subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "hango_project", "worker", "--pool",
                 "gevent", "--loglevel", "WARNING", "-Q", "runs", "--hostname",
                 f"bench-{os.getpid()}-{k}@%h", "--without-mingle", "--without-gossip"],
                cwd=ROOT, env={**os.environ, **self.env}, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True))
            logs.append(log.name)
        time.sleep(8)  # started and consuming (a warning-level log says nothing of ready)
        for worker, log_path in zip(self.workers, logs, strict=True):
            if worker.poll() is not None:
                raise SystemExit(f"worker did not start:\n{Path(log_path).read_text()}")

    def stop(self) -> None:
        for worker in self.workers:
            stop_group(worker, timeout=60)
        self.workers = []

    def triggers(self, n: int) -> dict:
        from hango_project.celery import app
        from runs.intake.trigger_payload import sign

        app.conf.update(result_backend=self.env["CELERY_BROKER_URL"])
        messages = []
        for k in range(n):
            payload = json.dumps({"tenant": str(self.member.tenant_id),
                                  "key": self.key.split("_")[1], "agent": str(self.agent.pk),
                                  "content": f"message {k}",
                                  "idempotency_key": f"bench-{uuid.uuid4()}"})
            messages.append((payload, sign(payload, self.key)))

        def send_all() -> tuple[float, list[dict]]:
            started = time.perf_counter()
            results = [app.send_task("hango.send_message", args=list(m), queue="runs")
                       for m in messages]
            answers = [r.get(timeout=600) for r in results]
            return time.perf_counter() - started, answers

        took, answers = send_all()
        statuses = {a["status"] for a in answers}
        again, repeats = send_all()
        return {"n": n, "seconds": took, "per_s": n / took, "statuses": sorted(statuses),
                "duplicate_seconds": again, "duplicate_per_s": n / again,
                "duplicate_statuses": sorted({a["status"] for a in repeats})}

    def schedules(self, s: int) -> dict:
        from django.utils import timezone

        from schedules.models import Fire, Schedule
        from schedules.services import schedule_create

        made = [schedule_create(member=self.member, data={
            "name": f"bench {k}", "agent": self.agent, "cron": "0 3 * * *",
            "content": f"fire {k}", "pause_after_failures": 0}) for k in range(s)]
        at = timezone.now() + timedelta(seconds=3)
        Schedule.objects.filter(pk__in=[m.pk for m in made]).update(next_run_at=at)
        wait_until(lambda: Fire.objects.filter(schedule__in=made).count() >= s, timeout=600,
                   what="the schedules' fires", every=0.2)
        skews = [(f.fired_at - f.fire_at).total_seconds()
                 for f in Fire.objects.filter(schedule__in=made)]
        per_schedule = Fire.objects.filter(schedule__in=made).values("schedule").distinct()
        return {"schedules": s, "fires": len(skews), "fired_once": per_schedule.count() == s,
                "skew_p50": st.median(skews), "skew_p99": pct(skews, 99),
                "skew_max": max(skews)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--messages", type=int, default=1000, help="trigger messages sent")
    ap.add_argument("--schedules", type=int, default=1000, help="schedules made due at once")
    ap.add_argument("--processes", type=int, default=len(os.sched_getaffinity(0)),
                    help="worker processes (default: one per CPU, as make worker)")
    ap.add_argument("--db", default=os.environ.get("BENCH_TRIGGERS_DATABASE_URL", DEFAULT_DB))
    ap.add_argument("--broker", default=os.environ.get("BENCH_BROKER_URL", DEFAULT_BROKER),
                    help="a Redis database of the benchmark's own (emptied)")
    a = ap.parse_args()
    bench = Bench(a.db, a.broker, a.processes)
    bench.start()
    try:
        taken = bench.triggers(a.messages) if a.messages else None
        fired = bench.schedules(a.schedules) if a.schedules else None
    finally:
        bench.stop()
    print(f"hango triggers and schedules  {time.strftime('%Y-%m-%d %H:%M:%S')}  cpus "
          f"{os.cpu_count()}  load {os.getloadavg()[0]:.2f}  {a.processes} worker processes")
    if taken:
        print(f"  {taken['n']} hango.send_message messages, each a new session and run: "
              f"{taken['per_s']:.0f}/s taken ({taken['seconds']:.2f} s; answers "
              f"{taken['statuses']}); sent again: {taken['duplicate_per_s']:.0f}/s "
              f"({taken['duplicate_seconds']:.2f} s; {taken['duplicate_statuses']})")
    if fired:
        print(f"  {fired['schedules']} schedules due at the same second: {fired['fires']} "
              f"fires (once each: {'yes' if fired['fired_once'] else 'NO'}); skew p50 "
              f"{fired['skew_p50']:.2f} s, p99 {fired['skew_p99']:.2f} s, max "
              f"{fired['skew_max']:.2f} s")


if __name__ == "__main__":
    main()
