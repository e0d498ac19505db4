"""The peer side of bench_workers.py, run with the peer's interpreter (a venv holding deepagents,
langgraph-checkpoint-postgres, psycopg): deepagents on the shared workload
(``../shared/bench/peer/workload.py``), its PostgreSQL checkpoint committed at every step
(``durability="sync"``), in N processes that take runs from one queue as workers do — each
process builds its agent and its connection once, as a warm worker has them. Prints JSON.

Per run it stamps what the peer's own script stamps: entry to each model call, and the fixed
cost ``invoke`` -> first model call. First, one process runs ``--fixed-reps`` runs one at a
time (fixed cost unloaded); then the N processes run ``--runs`` runs of T turns at once.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics as st
import sys
import time
from pathlib import Path

PEER = Path(__file__).resolve().parent.parent.parent / "shared" / "bench" / "peer"
sys.path.insert(0, str(PEER))
CONFIG = "deepagents/pg-sync"


def _agent():
    from workload import ScriptedChatModel, build_agent, make_checkpointer

    model = ScriptedChatModel()
    saver, close = make_checkpointer("postgres")
    return model, build_agent("deepagents", model, saver), close


def _worker(jobs, results, turns: int, ready) -> None:
    from workload import run_once

    model, graph, close = _agent()
    run_once(graph, model, 2, durability="sync")  # warm
    ready.put(os.getpid())
    while jobs.get() is not None:
        r = run_once(graph, model, turns, durability="sync")
        results.put({"enter": model.stamps, "end": model.stamps[-1] + r["post"],
                     "pre": r["pre"]})
    close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--processes", type=int, default=4)
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--turns", type=int, default=20)
    ap.add_argument("--fixed-reps", type=int, default=0)
    a = ap.parse_args()
    fixed = []
    if a.fixed_reps:
        from workload import run_once

        model, graph, close = _agent()
        run_once(graph, model, 2, durability="sync")
        fixed = [run_once(graph, model, 2, durability="sync")["pre"]
                 for _ in range(a.fixed_reps)]
        close()
    ctx = mp.get_context("fork")
    jobs, results, ready = ctx.Queue(), ctx.Queue(), ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(jobs, results, a.turns, ready))
             for _ in range(a.processes)]
    for p in procs:
        p.start()
    for _ in procs:
        ready.get(timeout=120)
    started = time.perf_counter()
    for _ in range(a.runs):
        jobs.put(1)
    records = [results.get(timeout=600) for _ in range(a.runs)]
    for _ in procs:
        jobs.put(None)
    for p in procs:
        p.join(timeout=60)
    end = max(r["end"] for r in records)
    c2c = sorted(r["enter"][k] - r["enter"][k - 1] for r in records
                 for k in range(1, len(r["enter"])))
    n = sum(len(r["enter"]) - 1 for r in records)
    print(json.dumps({
        "config": CONFIG, "turns": n, "seconds": end - started, "tps": n / (end - started),
        "c2c_p50": st.median(c2c), "c2c_p99": c2c[min(len(c2c) - 1, int(0.99 * len(c2c)))],
        "pre_p50": st.median(r["pre"] for r in records),
        "fixed_pre": fixed,
    }))


if __name__ == "__main__":
    main()
