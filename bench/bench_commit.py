"""The turn's commit alone: the one statement prepared once per connection (what runs) against
the same statement parsed and planned at every call, and against the floor of any durable
checkpoint; prints figures only.

A workload run's turn writes are captured (``RunStore.commit_turn``), then
replayed on a freshly claimed run, turn after turn — each commit a new turn of that run, with its
messages and events (a call's usage row is written as the call ends:
``runs/execution/call_ledger.py``) — in rounds that alternate the three ways. Per commit: wall time
and the PostgreSQL backend's CPU (``/proc/<pid>/schedstat``); the first 5 commits of a round (the
statement being prepared, custom plans) are left out.

The floor (``bench/floor.py``, on a connection of its own) is the least a checkpoint that
survives a crash can write: one prepared statement, its own transaction, updating one JSONB
state row with this turn's state and inserting one row holding the turn's messages, on two
tables of its own (``bench_floor_*``, dropped at the end) with a primary key each, through the
bare driver. It is one round trip and one WAL flush, as hango's commit is; what hango's costs
above it is its rows (two messages, the events), their indexes and the fence.
This thread's CPU is shown too: the client's part of a commit (binding, the driver, the round
trip's system calls).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics as st
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

from bench_turns import DEFAULT_DB, PROMPT, Durable  # noqa: E402

from bench.databases import backend_cpu  # noqa: E402
from bench.floor import Floor  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--db", default=os.environ.get("BENCH_DATABASE_URL", DEFAULT_DB))
    ap.add_argument("--commits", type=int, default=60, help="per round")
    ap.add_argument("--rounds", type=int, default=6, help="per way, alternating")
    a = ap.parse_args()
    durable = Durable(a.db, {20})
    from django.db import connection

    from hango_project.ids import time_ordered_uuid
    from runs.execution.store import pg_turn, store
    from runs.execution.worker import claim_run

    writes = []
    runs_store = store()
    commit = runs_store.commit_turn
    runs_store.commit_turn = lambda write: (writes.append(write), commit(write))[1]  # type: ignore[method-assign]
    durable.run(20)
    del runs_store.commit_turn  # type: ignore[attr-defined]
    template = [w for w in writes if w.finish is None]

    class Plain:  # the same statement, parsed and planned by every call
        def run(self, cursor, params):
            cursor.execute(pg_turn._STATEMENTS[False], params)

    floor = Floor(a.db)

    def floor_commit(write) -> tuple | None:  # its row, as commit_turn answers Committed
        return floor.commit(write.state_json, write.messages[0].id, [
            {"role": m.role, "content": m.content} for m in write.messages])

    ways = {"prepared": pg_turn._TURN[False], "plain": Plain(), "floor": floor}
    results: dict[str, tuple[list[float], list[float], list[float]]] = {
        w: ([], [], []) for w in ways}
    for n in range(len(ways) * a.rounds):
        way = list(ways)[n % len(ways)]
        session = durable.services.session_create(member=durable.member,
                                                  agent=durable.agents[20])
        _, queued = durable.services.message_post(session=session, content=PROMPT)
        run = claim_run(str(queued.pk), "bench")
        assert run is not None
        if way != "floor":
            pg_turn._TURN[False] = ways[way]
        write_turn = floor_commit if way == "floor" else pg_turn.commit_one_statement
        seq, wall, cpu, client = 2, [], [], []
        for i in range(a.commits):
            w = template[i % len(template)]
            messages = [m._replace(id=time_ordered_uuid(), seq=seq + j)
                        for j, m in enumerate(w.messages)]
            write = dataclasses.replace(w, run_id=run.pk, session_id=run.session_id,
                                        epoch=run.epoch, expected_turn=i, turn=i + 1,
                                        messages=messages)
            pid = (floor.backend_pid() if way == "floor"
                   else connection.connection.info.backend_pid)
            c0, h0, t0 = backend_cpu(pid), time.thread_time(), time.perf_counter()
            assert write_turn(write) is not None
            t1, h1, c1 = time.perf_counter(), time.thread_time(), backend_cpu(pid)
            seq += len(messages)
            if i >= 5:
                wall.append(t1 - t0)
                cpu.append(c1 - c0)
                client.append(h1 - h0)
        for kept, new in zip(results[way], (wall, cpu, client), strict=True):
            kept.extend(new)
    pg_turn._TURN[False] = ways["prepared"]
    floor.close()
    print(f"hango commit benchmark  {time.strftime('%Y-%m-%d %H:%M:%S')}  cpus {os.cpu_count()}"
          f"  load {os.getloadavg()[0]:.2f}")
    print(f"\n== one turn's commit, {a.rounds} rounds x {a.commits - 5} commits each way: ms, "
          "median (p10–p90) ==")
    for way, (wall, cpu, client) in results.items():
        print(f"{way:<9} wall {_q(wall)}   backend CPU {_q(cpu)}   this thread's CPU "
              f"{_q(client)}")
    ratio = st.median(results["prepared"][0]) / st.median(results["floor"][0])
    print(f"\nhango's commit / the floor (median wall): {ratio:.2f}x")


def _q(xs: list[float]) -> str:
    xs = sorted(xs)
    return (f"{1e3 * st.median(xs):.3f} ({1e3 * xs[len(xs) // 10]:.3f}–"
            f"{1e3 * xs[9 * len(xs) // 10]:.3f})")


if __name__ == "__main__":
    main()
