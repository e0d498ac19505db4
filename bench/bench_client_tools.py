"""Client tools at scale: N runs parked on a client tool call, then all answered at once over
HTTP. Prints figures only; how to run it: README.md ("Client tools").

Through the front door: gunicorn as ``make serve`` runs it (gevent), worker processes as
``make worker`` starts them (a gevent process per CPU), the HTTP API. N sessions each get a
message whose model (``scripted:calls``) calls the agent's client tool; once every run is
``requires_action``, C threads post every answer (``POST /v1/runs/{id}/tool-results``) as fast
as the server takes them. Measured: how long the N runs took to park, each answer's latency,
and from the first answer to the last run completed. Checked: every run completed, each
answer stored once (one tool_result per call), each run resumed once (its status events
``queued running requires_action queued running completed``), no answer refused.
"""

from __future__ import annotations

import argparse
import os
import statistics as st
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.databases import ensure_database  # noqa: E402
from bench.faults_stack import wait_until  # noqa: E402
from bench.sampling import pct  # noqa: E402
from tests.support.servers import GunicornProcess, stop_group  # noqa: E402

DEFAULT_DB = "postgres://postgres@127.0.0.1:5432/hango_bench_client_tools"
DEFAULT_BROKER = "redis://127.0.0.1:6379/12"
LOOKUP = {"name": "lookup_order", "description": "Find an order by its number.",
          "input_schema": {"type": "object", "properties": {"order": {"type": "integer"}},
                           "required": ["order"]}}
RESUMED_ONCE = ["queued", "running", "requires_action", "queued", "running", "completed"]



class Bench:
    def __init__(self, db: str, broker: str, processes: int) -> None:
        ensure_database(db)
        self.env = {"DATABASE_URL": db, "CELERY_BROKER_URL": broker, "HANGO_BROKER_URL": broker,
                    "HANGO_RUN_INLINE": "0", "HANGO_WORKER_CONCURRENCY": "200",
                    "HANGO_RATE_LIMIT_PER_MINUTE": "0"}  # the load is the point
        os.environ.update(self.env)
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hango_project.settings")
        import django

        django.setup()
        import redis
        from django.core.management import call_command

        from accounts.services import tenant_bootstrap
        from agents.services import agent_create

        call_command("migrate", verbosity=0)
        redis.Redis.from_url(broker).flushdb()
        issued = tenant_bootstrap(tenant_name=f"bench-client-tools-{time.time_ns()}",
                                  email=f"bench-{time.time_ns()}@client-tools.test")
        self.key = issued.plaintext
        self.agent = agent_create(member=issued.api_key.member, data={
            "name": "asks", "model": "scripted:calls", "config": {"client_tools": [LOOKUP]}})
        self.processes = processes
        self.workers: list[subprocess.Popen] = []
        self.logs = Path(tempfile.mkdtemp(prefix="bench-client-tools-"))
        self.server = GunicornProcess(self.logs, database_url=db, env=self.env,
                                      worker_class="gevent")

    def start_workers(self) -> None:
        for k in range(self.processes):
            log = open(self.logs / f"worker-{k}.log", "w")  # noqa: SIM115 (a process's log)
            self.workers.append(subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "hango_project", "worker", "--pool",
                 "gevent", "--loglevel", "WARNING", "-Q", "runs", "--hostname",
                 f"bench-ct-{os.getpid()}-{k}@%h", "--without-mingle", "--without-gossip"],
                cwd=ROOT, env={**os.environ, **self.env}, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True))
        time.sleep(8)  # started and consuming (a warning-level log says nothing of ready)

    def stop(self) -> None:
        for worker in self.workers:
            stop_group(worker, timeout=60)
        self.server.stop()

    def client(self):  # one per thread: httpx clients are not shared across threads here
        import httpx

        return httpx.Client(base_url=self.server.url, timeout=120,
                            headers={"Authorization": f"Bearer {self.key}"})

    def run(self, n: int, concurrency: int) -> dict:
        from runs.models import Message, Run, RunEvent

        def start(k: int) -> str:
            with self.client() as http:
                session = http.post("/v1/sessions", json={"agent": str(self.agent.pk)}).json()
                posted = http.post(f"/v1/sessions/{session['id']}/messages",
                                   json={"content": f'call lookup_order {{"order": {k}}}'})
                posted.raise_for_status()
                return posted.json()["run"]["id"]

        began = time.perf_counter()
        with ThreadPoolExecutor(concurrency) as pool:
            runs = list(pool.map(start, range(n)))
        wait_until(lambda: Run.objects.filter(pk__in=runs, status="requires_action").count()
                   == n, timeout=1800, what="every run parked", every=0.5)
        parked = time.perf_counter() - began
        calls = {str(r.pk): r.state_json["pending_batch"]["pending"][0]["tool_use_id"]
                 for r in Run.objects.filter(pk__in=runs)}

        def answer(run_id: str) -> tuple[int, float]:
            with self.client() as http:
                sent = time.perf_counter()
                response = http.post(f"/v1/runs/{run_id}/tool-results", json={"results": [
                    {"tool_use_id": calls[run_id], "output": f"order of {run_id}"}]})
                return response.status_code, time.perf_counter() - sent

        began = time.perf_counter()
        with ThreadPoolExecutor(concurrency) as pool:
            answers = list(pool.map(answer, runs))
        answered = time.perf_counter() - began
        wait_until(lambda: Run.objects.filter(pk__in=runs, status="completed").count() == n,
                   timeout=1800, what="every run completed", every=0.5)
        finished = time.perf_counter() - began
        resumed_once = sum(
            [e.data["status"] for e in RunEvent.objects.filter(run_id=r, type="run.status")
             .order_by("seq")] == RESUMED_ONCE for r in runs)
        stored_once = sum(
            sum(b.get("tool_use_id") == calls[str(r.pk)] and b["type"] == "tool_result"
                for m in Message.objects.filter(session_id=r.session_id) for b in m.content) == 1
            for r in Run.objects.filter(pk__in=runs))
        latencies = [s for _, s in answers]
        return {"n": n, "parked_s": parked, "answered_s": answered, "finished_s": finished,
                "codes": sorted({c for c, _ in answers}), "p50": st.median(latencies),
                "p99": pct(latencies, 99), "max": max(latencies),
                "resumed_once": resumed_once, "stored_once": stored_once}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=1000, help="runs parked, then answered")
    ap.add_argument("--concurrency", type=int, default=32, help="client threads")
    ap.add_argument("--processes", type=int, default=len(os.sched_getaffinity(0)),
                    help="worker processes (default: one per CPU, as make worker)")
    ap.add_argument("--db", default=os.environ.get("BENCH_CLIENT_TOOLS_DATABASE_URL",
                                                   DEFAULT_DB))
    ap.add_argument("--broker", default=os.environ.get("BENCH_BROKER_URL", DEFAULT_BROKER),
                    help="a Redis database of the benchmark's own (emptied)")
    a = ap.parse_args()
    bench = Bench(a.db, a.broker, a.processes)
    try:
        bench.start_workers()
        got = bench.run(a.runs, a.concurrency)
    finally:
        bench.stop()
    print(f"hango client tools  {time.strftime('%Y-%m-%d %H:%M:%S')}  cpus {os.cpu_count()}  "
          f"load {os.getloadavg()[0]:.2f}  {a.processes} worker processes, "
          f"{a.concurrency} client threads")
    print(f"  {got['n']} runs parked on a client call in {got['parked_s']:.1f} s; answered at "
          f"once in {got['answered_s']:.1f} s ({got['n'] / got['answered_s']:.0f}/s; latency "
          f"p50 {got['p50'] * 1000:.0f} ms, p99 {got['p99'] * 1000:.0f} ms, max "
          f"{got['max'] * 1000:.0f} ms; statuses {got['codes']}); every run completed "
          f"{got['finished_s']:.1f} s after the first answer")
    print(f"  resumed exactly once: {got['resumed_once']}/{got['n']}; answer stored once: "
          f"{got['stored_once']}/{got['n']}")


if __name__ == "__main__":
    main()
