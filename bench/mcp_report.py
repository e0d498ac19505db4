"""What ``bench_mcp.py`` prints of its phases: the figures of each, the CPU an MCP call adds
over a built-in call, the MCP client's own steps, and issue 33's targets, PASS or MISS."""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

from bench.mcp_stack import SENDERS, SERVER

# The targets.
TARGET_WALL, TARGET_CONNECTIONS, TARGET_RSS_MIB = 1.3, 40, 0.3


def rss_per_run(row: dict[str, Any]) -> float:
    return float((row["rss_peak"] - row["rss_idle"]) / max(1, row["in_flight"]))


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def report(a: argparse.Namespace, *, ideal: float, seconds: list[float], processes: int,
           results: list[dict[str, Any]], client: dict[str, float] | None) -> None:
    """Every phase's figures, the CPU an MCP call adds, the client's own steps, and the
    issue's targets, PASS or MISS (nothing asserted)."""
    print(f"hango MCP benchmark  {time.strftime('%Y-%m-%d %H:%M:%S')}  cpus {os.cpu_count()}  "
          f"make worker: {processes} processes, make serve: 2")
    print(f"{a.runs} runs a phase, each {a.calls} calls (one a turn) of "
          f"{'+'.join(f'{s:g}' for s in seconds)} s, model time 0: ideal "
          f"{ideal:.3f} s a run; the MCP server {'' if a.idempotent else 'not '}marked "
          f"idempotent")
    for row in results:
        tool = f"{SERVER}__slow (MCP)" if row["tool"] == "mcp" else "echo (built-in)"
        how = (f"posting the messages ({a.posters} threads)" if row["mode"] == "posted"
               else f"handing the runs over ({SENDERS} threads)")
        print(f"\n{row['phase']}: {tool}  load {row['load'][0]:.2f} before, "
              f"{row['load'][1]:.2f} after")
        print(f"  runs: {row['statuses']}; calls the MCP server counted: {row['mcp_calls']}")
        print(f"  {how}: {row['starting']:.2f} s ({row['runs'] / row['starting']:.0f}/s)")
        print(f"  wall, first {'post' if row['mode'] == 'posted' else 'hand-over'} -> last run "
              f"finished: {row['wall']:.2f} s ({row['wall'] / ideal:.2f}x ideal)")
        print(f"  run phase, first run started -> last run finished: {row['run_phase']:.2f} s "
              f"({row['run_phase'] / ideal:.2f}x ideal)")
        print(f"  a run, started -> finished: p50 {row['per_run_p50']:.2f} s "
              f"({row['per_run_p50'] / ideal:.2f}x), p95 {row['per_run_p95']:.2f} s "
              f"({row['per_run_p95'] / ideal:.2f}x), max {row['per_run_max']:.2f} s")
        print(f"  most runs running at once: {row['in_flight']:.0f}")
        print(f"  PostgreSQL connections at most: {row['connections']:.0f} (web "
              f"{row['web_connections']:.0f}, workers {row['worker_connections']:.0f}; pools of "
              f"10 a process)")
        print(f"  worker RSS: {row['rss_idle']:.0f} MiB idle, {row['rss_peak']:.0f} MiB peak: "
              f"{rss_per_run(row):.3f} MiB a run in flight")
        print("  CPU ms a run: " + ", ".join(f"{g} {v:.2f}" for g, v in row["cpu_ms"].items()))
    print(f"\nthe CPU an MCP call adds over a built-in call (a run's CPU, MCP minus built-in, / "
          f"{a.calls}; the run's MCP session, listing and closing shared among its calls):")
    for mode in a.modes:
        pair = {r["tool"]: r for r in results if r["mode"] == mode}
        if len(pair) == 2:
            added = {g: (pair["mcp"]["cpu_ms"][g] - pair["builtin"]["cpu_ms"][g]) / a.calls
                     for g in pair["mcp"]["cpu_ms"]}
            print(f"  {mode}: worker {added['worker']:.2f} ms (a call: MCP "
                  f"{pair['mcp']['cpu_ms']['worker'] / a.calls:.2f}, built-in "
                  f"{pair['builtin']['cpu_ms']['worker'] / a.calls:.2f}); PostgreSQL "
                  f"{added['postgres']:.2f}, MCP server {added['mcp_server']:.2f}, web "
                  f"{added['web']:.2f}")
    if client is not None:
        session = client["connect"] + client["list"] + a.calls * client["call"] + client["close"]
        print(f"\nthe MCP client alone, one session at a time in a gevent process "
              f"({a.client_sessions} x 3 sessions, bench/mcp_client_cpu.py), CPU ms: connect "
              f"{client['connect']:.2f}, list the tools {client['list']:.2f}, a call "
              f"{client['call']:.2f}, close {client['close']:.2f}: a run's session with "
              f"{a.calls} calls {session:.2f}")
    print("\ntargets (the MCP phases):")
    for row in (r for r in results if r["tool"] == "mcp"):
        start = "first post" if row["mode"] == "posted" else "first hand-over"
        checks = [
            (f"wall <= {TARGET_WALL}x ideal, {start} -> last run end", row["wall"] / ideal,
             TARGET_WALL),
            (f"wall <= {TARGET_WALL}x ideal, run phase (first start -> last end)",
             row["run_phase"] / ideal, TARGET_WALL),
            (f"a run's wall <= {TARGET_WALL}x ideal, p50", row["per_run_p50"] / ideal,
             TARGET_WALL),
            (f"PostgreSQL connections <= {TARGET_CONNECTIONS}", row["connections"],
             TARGET_CONNECTIONS),
            (f"worker RSS a run in flight <= {TARGET_RSS_MIB} MiB", rss_per_run(row),
             TARGET_RSS_MIB),
        ]
        print(f"  {row['mode']} ({row['in_flight']:.0f} runs in flight at most):")
        for what, figure, target in checks:
            print(f"    {what}: {figure:.3f} -> {verdict(figure <= target)}")
