"""Does a durable turn cost more at turn 300 than at turn 10? Two runs, paired turn by turn, so
the machine's drift hits both alike; prints figures only. How to run it: README.md.

A long run (``scripted:workload-<T>``, T=300) executes alone up to turn T-20; then it and a
fresh run (``workload-25``) take turns: one turn of the long run (T-20+j), then one of the fresh
run (j), each on its own thread and database connection while the other waits at its model
call. The long run's last 10 turns are compared with the fresh run's turns 6..15 (the peer's
window around turn 10): the ratio of their medians, per pair of runs, wall clock and CPU (the
turn's thread and its PostgreSQL backend). Repeated; the median and range over the pairs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics as st
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

from bench_turns import DEFAULT_DB, PROMPT, Durable  # noqa: E402

TARGET = 1.1
PEER_SCRIPT = ROOT.parent / "shared" / "bench" / "peer" / "bench_turns.py"
PAIRED = 20  # the long run's last turns, each executed in turn with one of the fresh run's
FRESH = 25  # the fresh run's turns


class Baton:
    """Lets one of two threads run at a time; once one is done, the other runs freely."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.holder: str | None = None
        self.done: set[str] = set()

    def pass_to(self, other: str, me: str, *, wait: bool = True) -> None:
        with self.cond:
            self.holder = other
            self.cond.notify_all()
            if wait:
                self.cond.wait_for(lambda: self.holder == me or other in self.done)

    def finish(self, me: str) -> None:
        with self.cond:
            self.done.add(me)
            self.cond.notify_all()


def pair(durable: Durable, turns: int) -> dict[str, list[tuple[float, float]]]:
    """One long and one fresh run in alternation; per run, (wall, cpu) of each paired turn."""
    from django.db import connection

    baton = Baton()
    other = {"long": "fresh", "fresh": "long"}
    measured: dict[str, list[tuple[float, float]]] = {"long": [], "fresh": []}
    started: dict[str, tuple[float, float] | None] = {"long": None, "fresh": None}
    calls = {"long": 0, "fresh": 0}
    wrap = durable.wrap

    def stamped(provider, who: str):
        timed = wrap(provider)

        def entered() -> bool:  # at a model call's entry; whether this turn is paired
            k = calls[who]
            calls[who] += 1
            paired = who == "fresh" or k >= turns - PAIRED
            if paired:
                if (begun := started[who]) is not None:  # the turn that ends here
                    wall, cpu = time.perf_counter(), durable.cpu()
                    measured[who].append((wall - begun[0], cpu - begun[1]))
                if who == "long" and k == turns - PAIRED:
                    fresh.start()  # from here on, one turn each
                baton.pass_to(other[who], who, wait=not (who == "long" and k == turns))
            return paired

        def left(paired: bool) -> None:  # at its exit
            if paired:
                started[who] = (time.perf_counter(), durable.cpu())

        timed.on_enter, timed.on_exit = entered, left
        return timed

    def execute(who: str, T: int) -> None:
        try:
            session = durable.services.session_create(member=durable.member,
                                                      agent=durable.agents[T])
            _, run = durable.services.message_post(session=session, content=PROMPT)
            durable.wrap = lambda provider: stamped(provider, who)
            assert durable.worker.execute_run(str(run.id)) == "completed"
        finally:
            baton.finish(who)
            connection.close()

    fresh = threading.Thread(target=execute, args=("fresh", FRESH))
    execute("long", turns)
    fresh.join()
    durable.wrap = wrap
    return measured


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--db", default=os.environ.get("BENCH_DATABASE_URL", DEFAULT_DB))
    ap.add_argument("--turns", type=int, default=300)
    ap.add_argument("--pairs", type=int, default=9)
    ap.add_argument("--peer", help="the python of a venv with the peer packages: after ours, "
                    "its growth runs (checkpoint per step), 3 of each agent")
    a = ap.parse_args()
    durable = Durable(a.db, {a.turns, FRESH})
    durable.run(FRESH)  # warm
    ratios: dict[str, list[float]] = {"wall": [], "cpu": []}
    for n in range(a.pairs):
        turns = pair(durable, a.turns)
        late = turns["long"][-10:]  # turns T-9..T
        early = turns["fresh"][5:15]  # turns 6..15
        for i, key in enumerate(("wall", "cpu")):
            ratios[key].append(st.median(t[i] for t in late) / st.median(t[i] for t in early))
        print(f"pair {n + 1}/{a.pairs}: wall {ratios['wall'][-1]:.3f} cpu "
              f"{ratios['cpu'][-1]:.3f}", file=sys.stderr, flush=True)
    print(f"hango growth benchmark  {time.strftime('%Y-%m-%d %H:%M:%S')}  cpus {os.cpu_count()}"
          f"  load {os.getloadavg()[0]:.2f}")
    print(f"\n== durable turn {a.turns - 9}..{a.turns} / turn 6..15, runs paired turn by turn, "
          f"{a.pairs} pairs: median (min–max) ==")
    for key, xs in ratios.items():
        print(f"{key:<5} {st.median(xs):.3f} ({min(xs):.3f}–{max(xs):.3f})  target <= {TARGET}: "
              f"{'yes' if st.median(xs) <= TARGET else 'NO'}")
    if a.peer:
        cmd = [a.peer, str(PEER_SCRIPT), "growth", "--reps", "3", "--turns", str(a.turns),
               "--modes", "pg-sync"]
        print(f"\n== peer, same machine, after ours (its own windows, unpaired): "
              f"{' '.join(cmd)} ==", flush=True)
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            print(f"peer run failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
            return
        for row in json.loads(proc.stdout)["rows"]:
            print(f"{row['config']:<22} turn10 {row['turn10_ms']:7.2f}  turn300 "
                  f"{row.get(f'turn{a.turns}_ms', float('nan')):7.2f} ms  ->  "
                  f"{row.get(f'turn{a.turns}_ms', float('nan')) / row['turn10_ms']:.2f}")


if __name__ == "__main__":
    main()
