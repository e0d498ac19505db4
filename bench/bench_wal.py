"""WAL written per durable turn, hango and the peer measured the same way; prints figures only.

At the entry to every model call a separate connection reads ``pg_current_wal_lsn()`` (the
peer's method, ``bench_pg_bytes.py``); a turn's WAL is what lies between two such positions. The
server is shared, so the plain difference also holds other databases' writes: each turn's WAL
records are read back with ``pg_walinspect`` and only those of the run's database count (the
records touching its relations, and every record of the transactions that did, their commit
records included). Full-page images (a page's first change after a checkpoint) are reported
apart: they depend on when the server last checkpointed, not on the turn. How to run it, what
the columns mean: README.md.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import statistics as st
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

from bench_turns import DEFAULT_DB, Durable  # noqa: E402

PEER_SCRIPT = ROOT / "bench" / "peer_wal.py"
TARGET_BYTES = 3 * 1024
RECORDS = ("select xid, resource_manager, record_type, record_length, fpi_length, block_ref "
           "from pg_get_wal_records_info(%s, %s)")


class Wal:
    """pg_walinspect over a monitor connection of its own."""

    def __init__(self, url: str) -> None:
        import psycopg2

        self.connection = psycopg2.connect(url)
        self.connection.autocommit = True
        self.cursor = self.connection.cursor()
        self.cursor.execute("create extension if not exists pg_walinspect")

    def position(self) -> str:
        self.cursor.execute("select pg_current_wal_lsn()")
        return self.cursor.fetchone()[0]

    def oid(self, database: str) -> int:
        self.cursor.execute("select oid from pg_database where datname = %s", (database,))
        return self.cursor.fetchone()[0]

    def turn(self, start: str, end: str, database: int) -> dict:
        """One turn's WAL: the database's records (bytes, FPI bytes, by record kind) and the
        whole server's."""
        self.cursor.execute(RECORDS, (start, end))
        rows = self.cursor.fetchall()
        mark = f"/{database}/"
        ours = {xid for xid, *_, ref in rows if ref and mark in ref and xid != 0}
        kinds: collections.Counter = collections.Counter()
        total = fpi = 0
        for xid, manager, kind, length, fpi_length, ref in rows:
            if (ref and mark in ref) or xid in ours:
                total, fpi = total + length, fpi + fpi_length
                rel = re.search(rf"rel \d+/{database}/(\d+)", ref or "")
                kinds[(manager, kind, rel.group(1) if rel else "")] += length - fpi_length
        self.cursor.execute("select pg_wal_lsn_diff(%s, %s)", (end, start))
        return {"bytes": total, "fpi": fpi, "kinds": kinds,
                "server": int(self.cursor.fetchone()[0])}

    def relation_names(self) -> dict[str, str]:
        self.cursor.execute("select relfilenode::text, relname from pg_class")
        return dict(self.cursor.fetchall())


def per_turn(wal: Wal, positions: list[str], database: int) -> list[dict]:
    # positions[k] = at the entry to model call k, then the run's end: turn k = [k-1, k], for
    # k = 1..T (what follows the last call finishes the run: not a turn).
    return [wal.turn(positions[k - 1], positions[k], database)
            for k in range(1, len(positions) - 1)]


def hango_run(durable: Durable, wal: Wal, turns: int) -> list[str]:
    positions: list[str] = []
    wrap = durable.wrap

    def stamped(provider):
        timed = wrap(provider)
        timed.on_enter = lambda: positions.append(wal.position())
        return timed

    durable.wrap = stamped
    try:
        durable.run(turns)
    finally:
        durable.wrap = wrap
    positions.append(wal.position())
    return positions


def summary(xs: list[dict]) -> dict:
    """Per turn: median (the typical turn) and mean of the database's WAL, with and without
    full-page images; the whole server's."""
    return {"median": st.median(t["bytes"] for t in xs),
            "median_no_fpi": st.median(t["bytes"] - t["fpi"] for t in xs),
            "mean": st.mean(t["bytes"] for t in xs),
            "mean_no_fpi": st.mean(t["bytes"] - t["fpi"] for t in xs),
            "fpi_mean": st.mean(t["fpi"] for t in xs),
            "server_median": st.median(t["server"] for t in xs)}


def window(turns: list[dict], k: int, half: int = 5) -> float:
    lo, hi = max(1, k - half + 1), min(len(turns), k + half)
    return st.median(t["bytes"] - t["fpi"] for t in turns[lo - 1:hi])


def run_peer(python: str, turns: int) -> dict | None:
    proc = subprocess.run([python, str(PEER_SCRIPT), "--turns", str(turns)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        print(f"peer run failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}", flush=True)
        return None
    return json.loads(proc.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--db", default=os.environ.get("BENCH_DATABASE_URL", DEFAULT_DB))
    ap.add_argument("--turns", type=int, default=20)
    ap.add_argument("--reps", type=int, default=5, help="runs of --turns each side, alternating")
    ap.add_argument("--growth-turns", type=int, default=300, help="one run each; 0 skips it")
    ap.add_argument("--peer", help="the python of a venv with the peer packages: run it too")
    ap.add_argument("--json", help="write the per-turn figures here")
    a = ap.parse_args()
    sizes = {a.turns, a.growth_turns} - {0}
    durable = Durable(a.db, sizes)
    wal = Wal(a.db)
    ours_db = wal.oid(a.db.split("?")[0].rsplit("/", 1)[1])
    durable.run(a.turns)  # warm
    results: dict[str, dict[int, list[list[dict]]]] = collections.defaultdict(
        lambda: collections.defaultdict(list))
    for rep in range(a.reps):
        results["hango"][a.turns].append(per_turn(wal, hango_run(durable, wal, a.turns),
                                                  ours_db))
        if a.peer and (peer := run_peer(a.peer, a.turns)) is not None:
            peer_db = wal.oid(peer["database"])
            for agent, positions in peer["agents"].items():
                results[agent][a.turns].append(per_turn(wal, positions, peer_db))
        print(f"T={a.turns}: rep {rep + 1}/{a.reps} done", file=sys.stderr, flush=True)
    if a.growth_turns:
        results["hango"][a.growth_turns].append(
            per_turn(wal, hango_run(durable, wal, a.growth_turns), ours_db))
        if a.peer and (peer := run_peer(a.peer, a.growth_turns)) is not None:
            peer_db = wal.oid(peer["database"])
            for agent, positions in peer["agents"].items():
                results[agent][a.growth_turns].append(per_turn(wal, positions, peer_db))
    report(a, results, wal.relation_names())
    if a.json:
        Path(a.json).write_text(json.dumps(
            {who: {T: [[{k: v for k, v in t.items() if k != "kinds"} for t in run]
                        for run in runs] for T, runs in by.items()}
             for who, by in results.items()}))


def report(a, results, names) -> None:
    print(f"\n== WAL bytes per turn, T={a.turns}, {a.reps} runs each (median over "
          "runs of each run's figure, min–max) ==")
    print(f"{'who':<14} {'typical':>16} {'no FPI':>16} {'mean':>16} {'mean no FPI':>16} "
          f"{'FPI mean':>9} {'server':>9}")
    rows = {}
    for who, by in results.items():
        s = [summary(run) for run in by.get(a.turns, [])]
        if not s:
            continue
        rows[who] = s

        def col(key, s=s):
            xs = [x[key] for x in s]
            return f"{st.median(xs):6.0f} ({min(xs):.0f}–{max(xs):.0f})"
        print(f"{who:<14} {col('median'):>16} {col('median_no_fpi'):>16} {col('mean'):>16} "
              f"{col('mean_no_fpi'):>16} {st.median(x['fpi_mean'] for x in s):9.0f} "
              f"{st.median(x['server_median'] for x in s):9.0f}")
    if "hango" in rows:
        typical = st.median(x["median"] for x in rows["hango"])
        print(f"target <= {TARGET_BYTES} B per turn (typical): "
              f"{'yes' if typical <= TARGET_BYTES else 'NO'}")
        for who in rows:
            if who != "hango":
                theirs = st.median(x["median"] for x in rows[who])
                print(f"{who}/hango (typical turn) = {theirs / typical:.1f}x")
        kinds: collections.Counter = collections.Counter()
        runs = results["hango"][a.turns]
        for run in runs:
            for t in run:
                kinds.update(t["kinds"])
        n = sum(len(run) for run in runs)
        print("\nhango, where a turn's bytes go (mean per turn, without full-page images):")
        for (manager, kind, rel), size in kinds.most_common(24):
            print(f"  {size / n:7.1f}  {manager:<11} {kind:<14} {names.get(rel, rel)}")
    if a.growth_turns:
        print(f"\n== T={a.growth_turns}: WAL bytes per turn without FPI around turn k (median of "
              "a 10-turn window) ==")
        for who, by in results.items():
            for run in by.get(a.growth_turns, []):
                ks = [k for k in (10, 100, 300) if k <= a.growth_turns]
                print(f"{who:<14} " + "  ".join(f"turn{k} {window(run, k):6.0f}" for k in ks))


if __name__ == "__main__":
    main()
