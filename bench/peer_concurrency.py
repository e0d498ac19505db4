"""The peer side of bench_concurrency.py, run with the peer's interpreter (a venv holding
deepagents, langchain, langgraph-checkpoint-postgres, psycopg[pool], psutil): N runs of the
shared workload (``../shared/bench/peer/workload.py``: its agents and tools) at once on one
asyncio loop, each model call taking ``--latency-ms``, the checkpoint committed to PostgreSQL at
every step (``durability="sync"``) through an ``AsyncConnectionPool`` of ``--pool`` connections.
Prints one JSON object.

The model is the workload's scripted one made stateless (each run's step is the number of tool
results in its request, as the shared model asserts it is) and asynchronous: it awaits its
latency, so runs overlap as they would on a real model. Per run it stamps when the run was
started and when its first model call came; the process samples its runs in flight, its RSS
and the database's connections while they go.
"""

from __future__ import annotations

import argparse
import asyncio
import contextvars
import json
import os
import statistics as st
import sys
import time
import uuid
from pathlib import Path

PEER = Path(__file__).resolve().parent.parent.parent / "shared" / "bench" / "peer"
sys.path.insert(0, str(PEER))

from langchain_core.messages import ToolMessage  # noqa: E402
from langchain_core.outputs import ChatGeneration, ChatResult  # noqa: E402
from workload import (  # noqa: E402
    ADMIN_DSN,
    PG_DSN,
    ScriptedChatModel,
    build_agent,
    ensure_pg_db,
    script_message,
)

_first_call: contextvars.ContextVar[list[float] | None] = contextvars.ContextVar(
    "first_call", default=None)


class LatentModel(ScriptedChatModel):
    """The shared scripted model, stateless and with a model call's latency."""

    latency_s: float = 2.0

    def _step(self, messages) -> ChatResult:
        i = sum(1 for m in messages if isinstance(m, ToolMessage))
        return ChatResult(generations=[ChatGeneration(message=script_message(i, self.turns))])

    def _generate(self, messages, stop=None, run_manager=None, **kw) -> ChatResult:
        time.sleep(self.latency_s)
        return self._step(messages)

    async def _agenerate(self, messages, stop=None, run_manager=None, **kw) -> ChatResult:
        stamps = _first_call.get()
        if stamps is not None and not stamps:
            stamps.append(time.time())
        await asyncio.sleep(self.latency_s)
        return self._step(messages)


def _rss_mib() -> float:
    with open("/proc/self/status") as f:
        line = next(x for x in f if x.startswith("VmRSS:"))
    return int(line.split()[1]) / 1024


async def _connections(dsn: str) -> int:
    import psycopg

    async with await psycopg.AsyncConnection.connect(ADMIN_DSN, autocommit=True) as conn:
        cur = await conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s",
                                 (dsn.rsplit("/", 1)[1],))
        (count,) = await cur.fetchone()
        return int(count)


async def main_async(a: argparse.Namespace) -> dict:
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from psycopg.rows import dict_row
    from psycopg_pool import AsyncConnectionPool

    ensure_pg_db()
    pool = AsyncConnectionPool(PG_DSN, min_size=1, max_size=a.pool, open=False,
                               kwargs={"autocommit": True, "prepare_threshold": 0,
                                       "row_factory": dict_row})
    await pool.open()
    saver = AsyncPostgresSaver(pool)
    await saver.setup()
    model = LatentModel(turns=a.turns, latency_s=a.latency_ms / 1000)
    graph = build_agent(a.agent, model, saver)
    # Warm: one short run (imports, the first statements).
    warm = LatentModel(turns=1, latency_s=0.0)
    await build_agent(a.agent, warm, saver).ainvoke(
        {"messages": [{"role": "user", "content": "Run the benchmark task."}]},
        {"recursion_limit": 1000, "configurable": {"thread_id": str(uuid.uuid4())}},
        durability="sync")

    in_flight, most = 0, 0
    records: list[dict] = []

    async def one() -> None:
        nonlocal in_flight, most
        stamps: list[float] = []
        _first_call.set(stamps)
        started = time.time()
        in_flight += 1
        most = max(most, in_flight)
        out = await graph.ainvoke(
            {"messages": [{"role": "user", "content": "Run the benchmark task."}]},
            {"recursion_limit": 1000, "configurable": {"thread_id": str(uuid.uuid4())}},
            durability="sync")
        in_flight -= 1
        assert out["messages"][-1].content == f"All {a.turns} steps done.", out["messages"][-1]
        records.append({"start": started, "first": stamps[0], "end": time.time()})

    samples = {"rss": [], "connections": []}
    done = asyncio.Event()

    async def sample() -> None:
        while not done.is_set():
            samples["rss"].append(_rss_mib())
            samples["connections"].append(await _connections(PG_DSN))
            try:
                await asyncio.wait_for(done.wait(), 0.25)
            except TimeoutError:
                pass

    idle_rss = _rss_mib()
    sampler = asyncio.create_task(sample())
    started = time.time()
    await asyncio.gather(*(one() for _ in range(a.runs)))
    wall = time.time() - started
    done.set()
    await sampler
    await pool.close()
    to_first = sorted(r["first"] - r["start"] for r in records)
    calls = a.turns + 1
    return {
        "config": f"{a.agent}/asyncio/pool-{a.pool}", "runs": a.runs, "calls": calls,
        "most_in_flight": most, "wall": wall, "ideal": calls * a.latency_ms / 1000,
        "turns_per_s": a.runs * calls / wall,
        "connections_peak": max(samples["connections"], default=0),
        "rss_idle_mib": idle_rss, "rss_peak_mib": max(samples["rss"], default=idle_rss),
        "first_p50": st.median(to_first), "first_p99": to_first[int(0.99 * (len(to_first) - 1))],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--agent", choices=["create_agent", "deepagents"], default="create_agent")
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--turns", type=int, default=4, help="tool turns; a run makes turns + 1 calls")
    ap.add_argument("--latency-ms", type=int, default=2000)
    ap.add_argument("--pool", type=int, default=20, help="PostgreSQL connections")
    a = ap.parse_args()
    os.environ.setdefault("LANGCHAIN_TRACING_V2", "false")
    print(json.dumps(asyncio.run(main_async(a))))


if __name__ == "__main__":
    main()
