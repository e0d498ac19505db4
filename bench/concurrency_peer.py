"""The peers' side of ``bench_concurrency.py``: langchain ``create_agent`` or deepagents running
the same runs in a venv of their own (``peer_concurrency.py``), metered as hango's rounds are."""

from __future__ import annotations

import json
import resource
import subprocess
from pathlib import Path

from bench.sampling import CpuMeter, backends_of, pids_named

PEER_SCRIPT = Path(__file__).resolve().parent / "peer_concurrency.py"
PEERS = ("create_agent", "deepagents")
PEER_DATABASE = "anchors_bench"  # the peers' (shared/bench/peer/workload.py)


def run_peer(python: str, agent: str, runs: int, turns: int, latency_ms: int) -> dict | None:
    cmd = [python, str(PEER_SCRIPT), "--agent", agent, "--runs", str(runs), "--turns",
           str(turns), "--latency-ms", str(latency_ms), "--pool", "20"]
    meter = CpuMeter({"postgres": backends_of(PEER_DATABASE),
                      "redis": lambda: pids_named("redis-server")}).start()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    after, cpu = resource.getrusage(resource.RUSAGE_CHILDREN), meter.stop()
    if proc.returncode != 0:
        print(f"peer {agent} failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}",
              flush=True)
        return None
    row = json.loads(proc.stdout.strip().splitlines()[-1])
    # The peer's process is its worker and its sender: its whole CPU (start-up included).
    spent = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    row.update(cpu_ms_worker=spent * 1000 / runs, cpu_ms_sender=0.0,
               **{f"cpu_ms_{group}": used * 1000 / runs for group, used in cpu.items()})
    return row
