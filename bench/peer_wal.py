"""The peer side of bench_wal.py, run with the peer's interpreter: one instrumented run of each
peer agent on the shared workload (``../shared/bench/peer/workload.py``), its PostgreSQL
checkpoint committed at every step (``durability="sync"``), with the WAL position read from a
separate connection at the entry to every model call, as the peer's ``bench_pg_bytes.py`` does.
Prints JSON: per agent, the positions and the database the checkpoints are written to.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

PEER = Path(__file__).resolve().parent.parent.parent / "shared" / "bench" / "peer"
sys.path.insert(0, str(PEER))


def main() -> None:
    import psycopg
    from workload import PG_DSN, ScriptedChatModel, build_agent, make_checkpointer, run_once

    ap = argparse.ArgumentParser()
    ap.add_argument("--turns", type=int, default=20)
    ap.add_argument("--agents", default="deepagents,create_agent")
    a = ap.parse_args()
    saver, close = make_checkpointer("postgres")
    monitor = psycopg.connect(PG_DSN, autocommit=True)
    model = ScriptedChatModel()
    out: dict = {"database": PG_DSN.rsplit("/", 1)[1], "agents": {}}
    for kind in a.agents.split(","):
        graph = build_agent(kind, model, saver)
        run_once(graph, model, 2, durability="sync")  # warm
        positions: list[str] = []

        def at_call(_: int, positions: list[str] = positions) -> None:
            positions.append(str(monitor.execute("select pg_current_wal_lsn()").fetchone()[0]))

        model.on_call = at_call
        run_once(graph, model, a.turns, durability="sync")
        model.on_call = None
        positions.append(str(monitor.execute("select pg_current_wal_lsn()").fetchone()[0]))
        out["agents"][kind] = positions
    monitor.close()
    close()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
