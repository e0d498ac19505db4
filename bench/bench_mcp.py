"""MCP tool calls in runs in flight: N runs, each making ``--calls`` calls of an MCP server's
tool that answers in ``--seconds``, on hango as a user starts it (``make serve``, ``make worker``
on their defaults), and the same runs calling a built-in tool instead, in the same invocation.
Prints figures only; how to run it and the targets: README.md ("MCP calls in flight").

The server is the in-repo test server (``tests/support/mcp_server.py``, its ``slow`` tool) on a
loopback port, in a process of its own, behind a bearer token: the tenant's credential, which
the server's ``Authorization`` header names. The agent's model is ``scripted:calls``, making one
call a turn as the message asks (no model time), so a run's ideal wall is its calls' seconds.
The calls differ by a millisecond each: the repeat-call guard answers a third identical call
itself.

Two ways in (``--modes``), each run with both tools:

* ``posted``: the user's path. N sessions made first (not timed), then the N messages posted
  over HTTP from ``--posters`` threads on keep-alive connections; the clock starts at the first
  post. The web tier's cost of a post (issue 35) paces the runs' starts, so fewer than N are in
  flight at once.
* ``handed``: N in flight. The rows the posts write, written in bulk beforehand, then each
  run's task sent as a post sends it, from two threads as ``make serve``'s two web processes
  would (:mod:`bench.handover`, as ``bench_concurrency.py``); the clock starts at the first.

While the runs go, every 100 ms, it samples the runs running, the web and worker tiers'
PostgreSQL connections (``pg_stat_activity``, by ``PGAPPNAME``) and the workers' RSS; it meters
the CPU (``/proc/<pid>/schedstat``: user and system time) of the worker processes, the web
processes, the MCP server, hango's database backends and this process. The runs' times are
read back from the API (``GET /v1/runs/{id}``). Then, hango stopped, the MCP client's own CPU a
step, one session at a time (``mcp_client_cpu.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics as st
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.databases import ensure_database  # noqa: E402
from bench.handover import hand_over, queue_runs  # noqa: E402
from bench.mcp_report import report  # noqa: E402
from bench.mcp_stack import SENDERS, SERVER, WEB_APP, WORKER_APP, Api, Hango, rss_mib  # noqa: E402
from bench.sampling import CpuMeter, Sampler, connections_named, pct  # noqa: E402
from tests.support.mcp_servers import McpServerProcess  # noqa: E402
from tests.support.servers import free_port  # noqa: E402

DEFAULT_DB = "postgres://postgres@127.0.0.1:5432/hango_bench_mcp"
DEFAULT_BROKER = "redis://127.0.0.1:6379/13"
TOKEN = "bench-token-0123456789"
FINISHED = ("completed", "failed", "cancelled")
MODES = ("posted", "handed")



@dataclass(frozen=True)
class Phase:
    """N runs of one agent, in one way: what each message asks (``{k}``: the run's number)."""

    mode: str  # posted | handed
    tool: str  # mcp | builtin
    agent: str
    text: str

    @property
    def name(self) -> str:
        return f"{self.mode}/{self.tool}"


class Bench:
    def __init__(self, a: argparse.Namespace) -> None:
        self.a = a
        ensure_database(a.db)
        os.environ.update({"DATABASE_URL": a.db, "CELERY_BROKER_URL": a.broker})
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hango_project.settings")
        import django

        django.setup()
        import redis
        from django.core.management import call_command

        from accounts.models import Tenant
        from accounts.services import tenant_bootstrap

        call_command("migrate", verbosity=0)
        redis.Redis.from_url(a.broker).flushdb()  # the benchmark's own: no task left over
        issued = tenant_bootstrap(tenant_name=f"bench-mcp-{time.time_ns()}",
                                  email=f"bench-{time.time_ns()}@mcp.test")
        # The operator lifts the tenant's rate limit (as in the admin): one key posts them all.
        Tenant.objects.filter(pk=issued.api_key.member.tenant_id).update(rate_limit_per_minute=0)
        self.member, self.key = issued.api_key.member, issued.plaintext
        self.log_dir = Path(tempfile.mkdtemp(prefix="bench-mcp-"))
        self.processes = len(os.sched_getaffinity(0))  # make worker's default
        self.mcp: McpServerProcess | None = None
        self.hango = Hango(env={**os.environ}, port=free_port(), log_dir=self.log_dir)
        self.api = Api(self.hango.url, self.key)
        self.agents: dict[str, str] = {}
        self._pids_conn: Any = None

    # -- set-up --------------------------------------------------------------------------

    def start(self) -> None:
        """The MCP server, hango, and through the API the tenant's credential, the server and
        the two agents."""
        self.mcp = McpServerProcess(self.log_dir, token=TOKEN)
        self.hango.start(processes=self.processes)
        self.api.send("PUT", "/v1/credentials/bench-token", {"value": TOKEN})
        server = self.api.send("POST", "/v1/mcp-servers", {
            "name": SERVER, "transport": "streamable_http", "url": self.mcp.url,
            "headers": {"Authorization": "Bearer {{credential:bench-token}}"},
            "idempotent": self.a.idempotent})
        self.agents["mcp"] = self.api.send("POST", "/v1/agents", {
            "name": "mcp-calls", "model": "scripted:calls",
            "config": {"mcp_servers": [{"server": server["id"], "tools": ["slow"]}]}})["id"]
        self.agents["builtin"] = self.api.send("POST", "/v1/agents", {
            "name": "builtin-calls", "model": "scripted:calls"})["id"]

    def stop(self) -> None:
        self.hango.stop()
        if self.mcp is not None:
            self.mcp.stop()

    def seconds(self) -> list[float]:
        """Each call's seconds: a millisecond apart, so no two calls of a run are equal."""
        return [round(self.a.seconds + c / 1000, 3) for c in range(self.a.calls)]

    def ideal(self) -> float:
        return sum(self.seconds())

    def phase(self, mode: str, tool: str) -> Phase:
        if tool == "mcp":
            calls = "".join(f"\ncall {SERVER}__slow {json.dumps({'seconds': s})}"
                            for s in self.seconds())
        else:
            calls = "".join(f'\ncall echo {{"text": "call {c} of run {{k}}"}}'
                            for c in range(self.a.calls))
        return Phase(mode, tool, self.agents[tool], "The benchmark's calls, run {k}." + calls)

    def warm(self) -> None:
        """A few runs of each agent, so every process has imported and prepared what a run
        needs before the clock."""
        for tool in self.agents:
            phase = self.phase("posted", tool)
            self.wait(self.post(phase, self.sessions(phase, 4 * self.processes))[0])

    # -- the ways in -----------------------------------------------------------------------

    def sessions(self, phase: Phase, n: int) -> list[str]:
        def make(_: int) -> str:
            return str(self.api.send("POST", "/v1/sessions", {"agent": phase.agent})["id"])

        with ThreadPoolExecutor(self.a.posters) as pool:
            return list(pool.map(make, range(n)))

    def post(self, phase: Phase, sessions: list[str]) -> tuple[list[str], float, float]:
        """A message posted to each session from ``--posters`` threads; the runs, and when the
        first post was sent and the last answered (Unix times)."""
        runs: list[str] = [""] * len(sessions)
        marks: list[float] = []

        def share(k: int) -> None:
            for i in range(k, len(sessions), self.a.posters):
                marks.append(time.time())
                answer = self.api.send("POST", f"/v1/sessions/{sessions[i]}/messages",
                                       {"content": phase.text.replace("{k}", str(i))},
                                       expect=(202,))
                runs[i] = answer["run"]["id"]
                marks.append(time.time())

        with ThreadPoolExecutor(self.a.posters) as pool:
            list(pool.map(share, range(self.a.posters)))
        return runs, min(marks), max(marks)

    def prepare(self, phase: Phase) -> Any:
        """What the phase needs before its clock: the sessions, or the queued runs."""
        if phase.mode == "posted":
            return self.sessions(phase, self.a.runs)
        return queue_runs(self.member, phase.agent,
                          [phase.text.replace("{k}", str(k)) for k in range(self.a.runs)])

    def start_runs(self, phase: Phase, prepared: Any) -> tuple[list[str], float, float]:
        """The runs under way: posted, or handed over; when the first went and the last."""
        if phase.mode == "posted":
            return self.post(phase, prepared)
        sent = hand_over(prepared, senders=SENDERS)
        return prepared, min(sent.values()), max(sent.values())

    def wait(self, runs: list[str], timeout: float = 900) -> None:
        from django.db import connection

        deadline = time.monotonic() + timeout
        with connection.cursor() as cur:
            while True:
                cur.execute("SELECT count(*) FROM runs WHERE id = ANY(%s::uuid[]) AND status "
                            "NOT IN %s", [runs, FINISHED])
                if not cur.fetchone()[0]:
                    return
                self.hango.check()
                if time.monotonic() > deadline:
                    raise SystemExit(f"runs still going after {timeout:.0f} s; logs in "
                                     f"{self.log_dir}")
                time.sleep(0.1)

    # -- a phase ---------------------------------------------------------------------------

    def run(self, phase: Phase) -> dict[str, Any]:
        n = self.a.runs
        prepared = self.prepare(phase)
        calls_before = self.mcp_calls()

        def running(cur: Any) -> float:
            cur.execute("SELECT count(*) FROM runs WHERE agent_id = %s AND status = 'running'",
                        [phase.agent])
            return float(cur.fetchone()[0])

        def hango_connections(cur: Any) -> float:
            cur.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name IN "
                        "(%s, %s)", [WEB_APP, WORKER_APP])
            return float(cur.fetchone()[0])

        workers = self.hango.workers()
        idle_rss = rss_mib(workers)
        load = os.getloadavg()[0]
        sampler = Sampler({"running": running, "connections": hango_connections,
                           "web_connections": connections_named(WEB_APP),
                           "worker_connections": connections_named(WORKER_APP),
                           "rss": lambda cur: rss_mib(workers)}, every=0.1)
        meter = CpuMeter({"worker": self.hango.worker_group, "web": self.hango.web,
                          "mcp_server": self.mcp_pids, "postgres": self.backends,
                          "bench": lambda: [os.getpid()]})
        profiles = self.profile(phase, workers)
        sampler.start()
        meter.start()
        runs, first, last = self.start_runs(phase, prepared)
        self.wait(runs)
        cpu = meter.stop()
        samples = sampler.stop()
        for profiler in profiles:
            profiler.send_signal(signal.SIGINT)
            profiler.wait()
        rows = self.read_runs(runs)
        statuses: dict[str, int] = {}
        for row in rows:
            statuses[row["status"]] = statuses.get(row["status"], 0) + 1
        started = {r["id"]: stamp(r["started_at"]) for r in rows if r["started_at"]}
        finished = {r["id"]: stamp(r["finished_at"]) for r in rows if r["finished_at"]}
        per_run = [finished[r] - started[r] for r in finished if r in started]
        return {
            "phase": phase.name, "mode": phase.mode, "tool": phase.tool, "runs": n,
            "statuses": statuses, "starting": last - first,
            "wall": max(finished.values()) - first,
            "run_phase": max(finished.values()) - min(started.values()),
            "per_run_p50": st.median(per_run), "per_run_p95": pct(per_run, 95),
            "per_run_max": max(per_run),
            "in_flight": max(samples["running"], default=0),
            "connections": max(samples["connections"], default=0),
            "web_connections": max(samples["web_connections"], default=0),
            "worker_connections": max(samples["worker_connections"], default=0),
            "rss_idle": idle_rss, "rss_peak": max(samples["rss"], default=idle_rss),
            "cpu_ms": {group: spent * 1000 / n for group, spent in cpu.items()},
            "mcp_calls": self.mcp_calls() - calls_before,
            "load": (load, os.getloadavg()[0]),
        }

    def profile(self, phase: Phase, workers: list[int]) -> list[subprocess.Popen[bytes]]:
        """With ``--profile``: py-spy recording each worker process (the GIL's holder, raw
        collapsed stacks) while an MCP phase goes."""
        if not self.a.profile or phase.tool != "mcp":
            return []
        return [subprocess.Popen(
            [self.a.profile, "record", "--nonblocking", "--gil", "--rate", "100", "--format",
             "raw", "--output", str(self.log_dir / f"py-spy-{phase.mode}-{pid}.txt"), "--pid",
             str(pid)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for pid in workers]

    def client_cpu(self) -> dict[str, float] | None:
        """The MCP client's CPU a step, one session at a time (``mcp_client_cpu.py``)."""
        if not self.a.client_sessions or self.mcp is None:
            return None
        done = subprocess.run(
            [sys.executable, str(ROOT / "bench" / "mcp_client_cpu.py"), self.mcp.url, TOKEN,
             "--sessions", str(self.a.client_sessions)], cwd=ROOT, capture_output=True,
            text=True, env={**os.environ}, timeout=600)
        if done.returncode != 0:
            print(f"mcp_client_cpu.py failed:\n{done.stderr[-2000:]}", file=sys.stderr)
            return None
        answer: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
        return answer

    def read_runs(self, runs: list[str]) -> list[dict[str, Any]]:
        with ThreadPoolExecutor(self.a.posters) as pool:
            return list(pool.map(lambda r: self.api.send("GET", f"/v1/runs/{r}"), runs))

    def mcp_calls(self) -> int:
        assert self.mcp is not None
        return int(self.mcp.journal()["counts"].get("slow", 0))

    def mcp_pids(self) -> list[int]:
        return [self.mcp.proc.pid] if self.mcp is not None and self.mcp.proc else []

    def backends(self) -> list[int]:
        """The PostgreSQL backends of hango's connections (web and workers)."""
        import psycopg2

        if self._pids_conn is None:
            self._pids_conn = psycopg2.connect(self.a.db)
            self._pids_conn.autocommit = True
        with self._pids_conn.cursor() as cur:
            cur.execute("SELECT pid FROM pg_stat_activity WHERE application_name IN (%s, %s)",
                        [WEB_APP, WORKER_APP])
            return [row[0] for row in cur.fetchall()]


def stamp(iso: str) -> float:
    return datetime.fromisoformat(iso).timestamp()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=1000, help="runs a phase, started at once")
    ap.add_argument("--calls", type=int, default=3, help="tool calls a run, one a turn")
    ap.add_argument("--seconds", type=float, default=1.0, help="the MCP tool's answer time")
    ap.add_argument("--quick", action="store_true", help="a smoke: --runs 100")
    ap.add_argument("--modes", default=",".join(MODES),
                    help="ways in, comma-separated: posted (over HTTP), handed (N in flight)")
    ap.add_argument("--posters", type=int, default=4,
                    help="threads posting the messages, each on a keep-alive connection")
    ap.add_argument("--idempotent", action="store_true",
                    help="mark the MCP server idempotent: no call journaled, no batch "
                         "checkpointed before it runs")
    ap.add_argument("--profile", nargs="?", const=shutil.which("py-spy") or "py-spy",
                    metavar="PY_SPY", help="record each worker with py-spy during the MCP "
                    "phases (raw collapsed stacks in the log directory)")
    ap.add_argument("--client-sessions", type=int, default=100,
                    help="sessions a round of the client's own CPU measure (0: none)")
    ap.add_argument("--db", default=os.environ.get("BENCH_MCP_DATABASE_URL", DEFAULT_DB))
    ap.add_argument("--broker", default=os.environ.get("BENCH_BROKER_URL", DEFAULT_BROKER),
                    help="a Redis database of the benchmark's own (emptied)")
    ap.add_argument("--json", help="write the raw results here")
    a = ap.parse_args()
    a.modes = [m for m in a.modes.split(",") if m]
    if unknown := set(a.modes) - set(MODES):
        ap.error(f"unknown modes {sorted(unknown)}; choose from {MODES}")
    if a.quick:
        a.runs = 100
    bench = Bench(a)
    print(f"logs: {bench.log_dir}", file=sys.stderr, flush=True)
    results = []
    try:
        bench.start()
        bench.warm()
        for mode in a.modes:
            for tool in ("mcp", "builtin"):
                results.append(bench.run(bench.phase(mode, tool)))
                print(f"{mode}/{tool} done", file=sys.stderr, flush=True)
        bench.hango.stop()  # the machine to the client alone
        client = bench.client_cpu()
    finally:
        bench.stop()
    report(a, ideal=bench.ideal(), seconds=bench.seconds(), processes=bench.processes,
           results=results, client=client)
    if a.json:
        Path(a.json).write_text(json.dumps({"phases": results, "client": client}, indent=1))


if __name__ == "__main__":
    main()
