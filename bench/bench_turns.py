"""Turn benchmark on the shared workload (../shared/bench/README.md); prints figures only.

A turn: what the harness does between model call k-1 and model call k, stamped by a provider
wrapper. Modes inproc, inproc+json, durable run interleaved. How to run, what it means: README.md.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import statistics as st
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.databases import backend_cpu, ensure_database  # noqa: E402
from bench.floor import Floor  # noqa: E402
from harness.agent import AgentConfig, AgentSpec  # noqa: E402
from harness.chain import Chain  # noqa: E402
from harness.deps import RunDeps, StackConfig  # noqa: E402
from harness.loop import Loop  # noqa: E402
from harness.messages import Message  # noqa: E402
from harness.providers import resolve_provider  # noqa: E402
from harness.providers.base import ProviderSettings, StreamDone  # noqa: E402
from harness.serde import message_to_json  # noqa: E402
from harness.stack import default_stack  # noqa: E402
from harness.state import State, state_to_json  # noqa: E402
from harness.steps import FinalOutput, NeverCancel  # noqa: E402
from harness.stores import FileInfo  # noqa: E402
from harness.tools import builtin_registry  # noqa: E402

PEER_SCRIPT = ROOT.parent / "shared" / "bench" / "peer" / "bench_turns.py"
DEFAULT_DB = "postgres://postgres@127.0.0.1:5432/hango_bench"
MODES = ("inproc", "inproc+json", "inproc+floor", "durable")
TARGET_MS = {"inproc": 0.5, "durable": 1.0}
TARGET_GROWTH = 1.1
PEER_BEST = ("deepagents/pg-sync", 14.3)  # PostgreSQL checkpoint committed each step (README)
PROMPT = "Run the benchmark task."


class Timed:
    """A provider wrapper stamping entry and exit of every model call; with ``cpu`` (a clock of
    CPU seconds), that clock too, outside the wall stamps. A benchmark that does more at a
    call's entry or exit sets ``on_enter`` (its result is handed to ``on_exit``) and
    ``on_exit``: they run outside every stamp."""

    def __init__(self, inner, cpu=None):
        self.inner, self.name, self.cpu = inner, inner.name, cpu
        self.enter, self.exit, self.cpu_in, self.cpu_out = [], [], [], []
        self.on_enter: Callable[[], Any] = lambda: None
        self.on_exit: Callable[[Any], None] = lambda entered: None

    def complete(self, request):
        entered = self._entered()
        response = self.inner.complete(request)
        self._left(entered)
        return response

    def stream(self, request):
        """The inner provider's stream, stamped: entry at the call, exit at its last event
        (when the loop has taken every delta, and may stop reading), so a turn stays exit ->
        entry."""
        entered = self._entered()
        for event in self.inner.stream(request):
            if isinstance(event, StreamDone):
                self._left(entered)
            yield event

    def _entered(self) -> Any:
        entered = self.on_enter()
        if self.cpu:
            self.cpu_in.append(self.cpu())
        self.enter.append(time.perf_counter())
        return entered

    def _left(self, entered: Any) -> None:
        self.exit.append(time.perf_counter())
        if self.cpu:
            self.cpu_out.append(self.cpu())
        self.on_exit(entered)

    def result(self, turns: int, started: float, **extra) -> dict:
        e, x, ci, co = self.enter, self.exit, self.cpu_in, self.cpu_out
        assert len(e) == turns + 1, (len(e), turns)
        cpu = {"cpu": [ci[k] - co[k - 1] for k in range(1, len(e))]} if ci else {}
        return {"turns": [e[k] - x[k - 1] for k in range(1, len(e))],
                "call_to_call": [e[k] - e[k - 1] for k in range(1, len(e))],
                "model": [x[k] - e[k] for k in range(len(e))], "pre": e[0] - started, **cpu,
                **extra}


class Keep:
    """Keeps nothing; with ``encode``, JSON-encodes what a durable checkpoint holds first."""

    cpu = None

    def __init__(self, encode: bool) -> None:
        self.encode, self.bytes = encode, 0

    def checkpoint(self, state, result) -> None:
        self.bytes += self.encode and len(json.dumps({
            "state": state_to_json(state), "events": result.events,
            "messages": [message_to_json(m) for m in result.messages]}))

    def figures(self) -> dict:
        return {"json_bytes": self.bytes} if self.encode else {}


class MemoryStores:
    """In-memory stores, so the in-process stack has every slot the durable one has."""

    def __init__(self) -> None:
        self.files: dict[str, str] = {}

    def load(self) -> list:  # memory files, skills: none, as the durable mode's agent
        return []

    def list(self) -> list[FileInfo]:
        return [FileInfo(path=p, size=len(c.encode())) for p, c in sorted(self.files.items())]

    def read(self, path: str) -> str | None:
        return self.files.get(path)

    def write(self, path: str, content: str) -> None:
        self.files[path] = content

    def save(self, summary: object) -> None:
        pass


def run_inproc(turns: int, checkpointer: Keep | Floor) -> dict:
    spec = AgentSpec(id="bench", name="bench", model=f"scripted:workload-{turns}",
                     config=AgentConfig(max_turns=turns + 1))
    started = time.perf_counter()  # "pre" = building the loop + before_run, to the first call
    provider, model = resolve_provider(spec.model, ProviderSettings())
    timed = Timed(provider, cpu=checkpointer.cpu)
    stores = MemoryStores()
    deps = RunDeps(memory=stores, skills=stores, files=stores, summaries=None, provider=timed,
                   model=model, tools=tuple(builtin_registry().all()))
    loop = Loop(agent=spec, chain=Chain(default_stack(StackConfig(agent=spec, deps=deps))),
                provider=timed, model=model, tools=builtin_registry().view(None))
    state = State(run_id=str(uuid.uuid4()), messages=[Message.user(PROMPT)])
    step = loop.run(state, control=NeverCancel(), checkpointer=checkpointer)
    assert isinstance(step, FinalOutput) and state.messages[-1].text == f"All {turns} steps done."
    return timed.result(turns, started, **checkpointer.figures())


# Per run: rows, pg_column_size (stored, after TOAST compression, as the peer counts) and the
# JSON text (payload). The runs row is rewritten by every checkpoint: its final size x checkpoints.
WRITTEN = (("content", "messages", "run_id", 0), ("data", "run_events", "run_id", 0),
           ("state_json", "runs", "id", 1))
WRITTEN_SQL = ("select count(*), coalesce(sum(pg_column_size(t.*)), 0), "
               "coalesce(sum(octet_length(t.{}::text)), 0) from {} t where t.{} = %s")
RELATIONS_SQL = ("select sum(pg_total_relation_size(t::regclass)) "
                 "from unnest(array['messages', 'run_events', 'runs']) t")


_backend: dict[int, int] = {}  # the backend pid each thread's statements ran on last


def thread_and_backend_cpu(connection) -> float:
    """CPU seconds of this thread and of its PostgreSQL backend (Django's ``connection``). A
    run gives its connection back to the process's pool before each model call (where this is
    read): the backend is then the one it ran on last, which the pool lends it next (the only
    thread here, it takes the same connection back)."""
    thread = threading.get_ident()
    if connection.connection is None and thread not in _backend:
        connection.ensure_connection()  # once: which backend it is
    if connection.connection is not None:
        _backend[thread] = connection.connection.info.backend_pid
    return time.thread_time() + backend_cpu(_backend[thread])


class Durable:
    """The worker service on PostgreSQL; message_post only creates the queued run."""

    def __init__(self, url: str, turns: set[int]) -> None:
        ensure_database(url)
        os.environ["DATABASE_URL"] = url
        # No broker, not inline, and no enqueue at all: this process executes the run itself.
        os.environ["HANGO_RUN_INLINE"] = "0"
        for variable in ("CELERY_BROKER_URL", "HANGO_BROKER_URL"):
            os.environ.pop(variable, None)
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hango_project.settings")
        import django

        django.setup()
        from django.core.management import call_command
        from django.db import connection

        from accounts.services import tenant_bootstrap
        from agents.services import agent_create
        from harness.providers import registry
        from runs.execution import tasks, worker
        from runs.intake import services

        call_command("migrate", verbosity=0)
        tasks.enqueue_run = lambda run_id: None
        real = registry.factory("scripted")
        assert real is not None
        for T in turns:  # the worker's provider for the benchmark's models, wrapped
            registry.add(f"scripted:workload-{T}", lambda name, knobs: self.wrap(real(name, knobs)))
        self.connection, self.services, self.worker = connection, services, worker
        self.member = tenant_bootstrap(tenant_name="bench", email="bench@bench.test").api_key.member
        self.agents = {T: agent_create(member=self.member, data={
            "name": f"bench-{T}", "model": f"scripted:workload-{T}",
            "config": {"max_turns": T + 1}}) for T in turns}

    def wrap(self, provider) -> Timed:
        self.timed = Timed(provider, cpu=self.cpu)
        return self.timed

    def cpu(self) -> float:
        return thread_and_backend_cpu(self.connection)

    def query(self, sql: str, params=()) -> tuple:
        with self.connection.cursor() as cur:
            cur.execute(sql, params)
            return cur.fetchone()

    def run(self, turns: int, physical: bool = False) -> dict:
        """One run; ``physical`` also measures the relations' growth (the first rep does)."""
        session = self.services.session_create(member=self.member, agent=self.agents[turns])
        _, run = self.services.message_post(session=session, content=PROMPT)
        before = int(self.query(RELATIONS_SQL)[0]) if physical else 0
        started = time.perf_counter()  # "pre" = claim + build_execution + before_run
        outcome = self.worker.execute_run(str(run.id))
        assert outcome == "completed", outcome
        grew = (int(self.query(RELATIONS_SQL)[0]) - before) / turns if physical else None
        rows = stored = payload = 0
        for column, table, key, rewritten in WRITTEN:
            n, size, text = self.query(WRITTEN_SQL.format(column, table, key), [run.id])
            rows += 0 if rewritten else n
            stored += size * (turns + 1 if rewritten else 1)
            payload += text * (turns + 1 if rewritten else 1)
        return self.timed.result(turns, started, rows=rows / turns, stored=int(stored) / turns,
                                 payload=int(payload) / turns, relation_growth=grew)


def med(xs):
    return st.median(xs) if xs else float("nan")


def window(turns, k, half=5):
    """Median of turns k-half+1..k+half (1-based), clipped: the peer's window."""
    lo, hi = max(1, k - half + 1), min(len(turns), k + half)
    return med(turns[lo - 1:hi])


def per_turn_ms(turns) -> float:
    return 1e3 * sum(turns) / len(turns)


def interleaved(runners, modes, turns, reps, label) -> dict[str, list[dict]]:
    raw: dict[str, list[dict]] = {m: [] for m in modes}
    for rep in range(reps):
        k = rep % len(modes)
        for m in modes[k:] + modes[:k]:
            raw[m].append(runners[m](turns, rep == 0))
        print(f"{label}: rep {rep + 1}/{reps} done", file=sys.stderr, flush=True)
    return raw


def verdict(value, limit) -> str:
    return f"{'<= ' + str(limit):>7} {'yes' if value <= limit else 'NO':>4}" if limit else " " * 12


def report(short, growth, turns, growth_turns, reps) -> None:
    print(f"\n== T={turns}, {reps} reps: ms/turn (per run: mean of its {turns} turns; median, "
          "min, p90 over runs) ==")
    print(f"{'mode':<12} {'median':>7} {'min':>7} {'p90':>7} {'target':>7} {'met':>4} "
          f"{'call->call':>10} {'model/call':>10} {'pre ms':>7} {'cpu ms':>7}")
    for mode, runs in short.items():
        xs = [per_turn_ms(r["turns"]) for r in runs]
        p90 = sorted(xs)[min(len(xs) - 1, int(0.9 * len(xs)))]  # nearest rank
        print(f"{mode:<12} {med(xs):7.3f} {min(xs):7.3f} {p90:7.3f} "
              f"{verdict(med(xs), TARGET_MS.get(mode))} "
              f"{med([per_turn_ms(r['call_to_call']) for r in runs]):10.3f} "
              f"{1e3 * med([med(r['model']) for r in runs]):10.4f} "
              f"{1e3 * med([r['pre'] for r in runs]):7.2f} "
              + (f"{med([per_turn_ms(r['cpu']) for r in runs]):7.3f}" if "cpu" in runs[0]
                 else f"{'':>7}"))
    if "durable" in short and "inproc+floor" in short:
        ours, least = (med([per_turn_ms(r["turns"]) for r in short[m]])
                       for m in ("durable", "inproc+floor"))
        print(f"durable / inproc+floor = {ours / least:.2f}x ({ours - least:+.3f} ms a turn): "
              "hango's durable turn against the in-process harness committing the floor of a "
              "checkpoint, measured in this run")
    if growth and growth_turns >= 10:
        ks = [k for k in (10, 100, 300) if k <= growth_turns]
        last = ks[-1]
        print(f"\n== T={growth_turns}, {len(next(iter(growth.values())))} reps: ms/turn around "
              "turn k (median of a 10-turn window; median over runs) ==")
        print(f"{'mode':<12} " + " ".join(f"{'turn' + str(k):>8}" for k in ks)
              + f" {f'{last}/10':>7} {'target':>7} {'met':>4} {f'call->call@{last}':>14} "
              f"{f'model@{last}':>10}")
        for mode, runs in growth.items():
            w = {k: 1e3 * med([window(r["turns"], k) for r in runs]) for k in ks}
            print(f"{mode:<12} " + " ".join(f"{w[k]:8.3f}" for k in ks)
                  + f" {w[last] / w[10]:7.2f} {verdict(w[last] / w[10], TARGET_GROWTH)} "
                  f"{1e3 * med([window(r['call_to_call'], last) for r in runs]):14.3f} "
                  f"{1e3 * med([window(r['model'], last) for r in runs]):10.3f}")
            if "cpu" in runs[0]:  # CPU (this thread + its backend): less noisy than the clock
                c = {k: 1e3 * med([window(r["cpu"], k) for r in runs]) for k in ks}
                ratios = [window(r["cpu"], last) / window(r["cpu"], 10) for r in runs]
                print(f"{'  cpu':<12} " + " ".join(f"{c[k]:8.3f}" for k in ks)
                      + f" {c[last] / c[10]:7.2f}  (per run: {min(ratios):.2f}–"
                      f"{max(ratios):.2f})")
    print()
    for T, data in ((turns, short), (growth_turns, growth)):
        if runs := data.get("inproc+json"):
            print(f"inproc+json T={T}: {med([r['json_bytes'] for r in runs]) / T:.0f} "
                  "JSON bytes encoded per turn")
        if runs := data.get("durable"):
            grew = [r["relation_growth"] for r in runs if r["relation_growth"] is not None]
            print(f"durable T={T}, per turn: {med([r['rows'] for r in runs]):.2f} rows inserted "
                  f"(messages + run_events) + 1 runs-row update; "
                  f"{med([r['stored'] for r in runs]):.0f} B stored (pg_column_size), "
                  f"{med([r['payload'] for r in runs]):.0f} B JSON payload; relations grew "
                  f"{med(grew):.0f} B (tables + indexes + TOAST, first run)")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS of this process (all modes; Django + psycopg2 loaded): {rss:.1f} MiB")


def run_peer(python: str, reps: int, turns: int) -> dict | None:
    cmd = [python, str(PEER_SCRIPT), "short", "--reps", str(reps), "--turns", str(turns)]
    print(f"\n== peer, same machine, after ours: {' '.join(cmd)} ==", flush=True)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        print(f"peer run failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
        return None
    out = json.loads(proc.stdout)
    print(f"{'config':<26} {'ms/turn':>8} {'min':>8} {'fixed ms':>9}\n" + "\n".join(
        f"{r['config']:<26} {r['ms_per_turn']:8.3f} {r['ms_per_turn_min']:8.3f} "
        f"{r['fixed_ms']:9.2f}" for r in out["rows"]))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--turns", type=int, default=20)
    ap.add_argument("--growth-turns", type=int, default=300, help="0 skips the growth runs")
    ap.add_argument("--growth-reps", type=int, default=3)
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--db", default=os.environ.get("BENCH_DATABASE_URL", DEFAULT_DB))
    ap.add_argument("--json", help="write the raw per-run results here")
    ap.add_argument("--peer", help="the python of a venv with the peer packages: run the peer too")
    a = ap.parse_args()
    modes = [m for m in a.modes.split(",") if m]
    if unknown := set(modes) - set(MODES):
        ap.error(f"unknown modes {sorted(unknown)}; choose from {MODES}")
    runners = {"inproc": lambda T, first: run_inproc(T, Keep(False)),
               "inproc+json": lambda T, first: run_inproc(T, Keep(True))}
    floor = Floor(a.db) if "inproc+floor" in modes else None
    if floor:
        runners["inproc+floor"] = lambda T, first: run_inproc(T, floor)
    if "durable" in modes:
        runners["durable"] = Durable(a.db, {a.turns, a.growth_turns} - {0}).run
    for m in modes:  # warm-up: lazy imports, first queries, caches
        runners[m](a.turns, False)
    gc.collect()
    short = interleaved(runners, modes, a.turns, a.reps, f"T={a.turns}")
    growth = (interleaved(runners, modes, a.growth_turns, a.growth_reps, f"T={a.growth_turns}")
              if a.growth_turns else {})
    if floor:
        floor.close()
    print(f"hango turn benchmark  {time.strftime('%Y-%m-%d %H:%M:%S')}  python "
          f"{sys.version.split()[0]}  cpus {os.cpu_count()}  load {os.getloadavg()[0]:.2f}")
    report(short, growth, a.turns, a.growth_turns, a.reps)
    peer = run_peer(a.peer, a.reps, a.turns) if a.peer else None
    name, peer_ms, source = *PEER_BEST, "shared README"
    for row in (peer or {}).get("rows", []):
        if row["config"] == name:
            peer_ms, source = row["ms_per_turn"], "measured in this run"
    if "durable" in modes:
        ours = med([per_turn_ms(r["call_to_call"]) for r in short["durable"]])
        print(f"\nbest peer ({name}, {source}): {peer_ms:.1f} ms/turn; hango durable "
              f"{ours:.3f} ms/turn call->call (the peer's stamp) -> peer/hango = "
              f"{peer_ms / ours:.1f}x")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"turns": a.turns, "growth_turns": a.growth_turns, "reps": a.reps,
                       "short": short, "growth": growth, "peer": peer}, f)


if __name__ == "__main__":
    main()
