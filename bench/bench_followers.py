"""Many followers of live runs on the web tier as ``make serve`` starts it: N runs, each followed
by ``--per-run`` event streams opened before it starts, on gunicorn with 2 gevent workers, the
runs executed by one worker as ``make worker`` starts it (model calls of ``--latency-ms``, the
answer streamed word by word). Prints figures only; how to run it: README.md ("Followers").

Each stream is read to its end by an asyncio client in this process; then every stream is
checked: its durable events each once and in order (the run's whole event list as the JSON
route has it), and each turn's deltas after every event of the turns before it and before its
own (the check ``tests/support/sse.py`` makes). While they go the benchmark samples the web
processes' PostgreSQL connections and RSS and the Redis connections subscribed to a channel.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics as st
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_concurrency import Hango  # noqa: E402
from bench.faults_stack import children, wait_until  # noqa: E402
from bench.sampling import Sampler, connections_named  # noqa: E402
from tests.support.servers import free_port, stop_group  # noqa: E402
from tests.support.sse import Frame, assert_turn_order, durable  # noqa: E402

DEFAULT_DB = "postgres://postgres@127.0.0.1:5432/hango_bench_followers"
DEFAULT_BROKER = "redis://127.0.0.1:6379/11"
WEB_APP = "hango-bench-web"  # the web processes' connections by name (libpq reads PGAPPNAME)


class Web:
    """gunicorn as make serve starts it, on a free port."""

    def __init__(self, env: dict[str, str]) -> None:
        self.port = free_port()
        self.log = tempfile.NamedTemporaryFile("w+", prefix="bench-followers-web-",
                                               suffix=".log", delete=False)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "hango_project.wsgi", "--bind",
             f"127.0.0.1:{self.port}", "--workers", "2", "--worker-class", "gevent",
             "--worker-connections", "2000", "--timeout", "60", "--no-control-socket"],
            # One key opens every stream: no rate limit.
            cwd=ROOT, env={**env, "PGAPPNAME": WEB_APP, "HANGO_RATE_LIMIT_PER_MINUTE": "0"},
            stdout=self.log,
            stderr=subprocess.STDOUT, start_new_session=True)
        wait_until(lambda: len(children(self.proc.pid)) >= 2, timeout=60, what="gunicorn")
        time.sleep(2)  # its workers load the app

    def rss_mib(self) -> float:
        total = 0
        for pid in children(self.proc.pid):
            with open(f"/proc/{pid}/status") as f:
                total += int(next(x for x in f if x.startswith("VmRSS:")).split()[1])
        return total / 1024

    def stop(self) -> None:
        stop_group(self.proc)


async def follow(client, url: str, key: str, run_id: str, opened: asyncio.Event,
                 count: list[int], total: int) -> list[Frame]:
    frames: list[Frame] = []
    fields: dict[str, str] = {}
    headers = {"Authorization": f"Bearer {key}", "Accept": "text/event-stream"}
    async with client.stream("GET", f"{url}/v1/runs/{run_id}/events",
                             headers=headers) as response:
        assert response.status_code == 200, await response.aread()
        async for line in response.aiter_lines():
            if line:
                if not line.startswith(":"):
                    name, _, value = line.partition(":")
                    fields[name] = value.removeprefix(" ")
                continue
            if "data" in fields:
                frames.append(Frame(event=fields.get("event", "message"),
                                    data=json.loads(fields["data"]), id=fields.get("id")))
                if len(frames) == 1:
                    count[0] += 1
                    if count[0] == total:
                        opened.set()
            fields = {}
    return frames


def send(run_ids: list[str]) -> None:
    """Hand the runs to the worker as posts do, one task each at its fair priority."""
    from django.db import connection

    from runs.execution import tasks

    for run_id in run_ids:
        tasks.send_run(run_id, priority=tasks.fair_priority(run_id))
    connection.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--per-run", type=int, default=1, help="streams following each run")
    ap.add_argument("--turns", type=int, default=4)
    ap.add_argument("--latency-ms", type=int, default=2000)
    ap.add_argument("--word-delay-ms", type=int, default=50)
    ap.add_argument("--db", default=os.environ.get("BENCH_FOLLOWERS_DATABASE_URL", DEFAULT_DB))
    ap.add_argument("--broker", default=DEFAULT_BROKER)
    a = ap.parse_args()
    import redis

    os.environ["HANGO_SCRIPTED_WORD_DELAY_MS"] = str(a.word_delay_ms)
    import logging

    logging.getLogger("httpx").setLevel(logging.WARNING)  # not a line per stream
    hango = Hango(a.db, a.broker, a.turns, a.latency_ms, concurrency=max(a.runs, 100),
                  pool_size=10, processes=1)
    key = hango.key
    run_ids = hango.queue(a.runs)  # queued, no task sent: streams open before any run starts
    web = Web({**os.environ, **hango.env})

    def subscribed(cur) -> float:
        clients = redis.Redis.from_url(a.broker).client_list()
        return float(sum(1 for c in clients if int(c.get("sub", 0))))

    sampler = Sampler({"connections": connections_named(WEB_APP),
                       "rss": lambda cur: web.rss_mib(), "subscribed": subscribed}, every=0.5)
    rss_before = [0.0]

    async def drive() -> tuple[list[list[Frame]], float, float]:
        import httpx

        opened, count = asyncio.Event(), [0]
        total = a.runs * a.per_run
        client = httpx.AsyncClient(timeout=300, limits=httpx.Limits(max_connections=None))
        streams = [asyncio.create_task(follow(client, f"http://127.0.0.1:{web.port}", key,
                                              run_id, opened, count, total))
                   for run_id in run_ids for _ in range(a.per_run)]
        started = time.monotonic()
        rss_before[0] = web.rss_mib()
        await asyncio.wait_for(opened.wait(), 300)
        all_open = time.monotonic() - started
        rss_open = web.rss_mib()
        hango.start_workers()
        await asyncio.to_thread(send, run_ids)
        got = await asyncio.gather(*streams)
        await client.aclose()
        return got, all_open, rss_open

    sampler.start()
    try:
        started = time.monotonic()
        got, all_open, rss_open = asyncio.run(drive())
        seconds = time.monotonic() - started
    finally:
        samples = sampler.stop()
        hango.stop()
        web.stop()
    report(a, run_ids, got, seconds, all_open, (rss_before[0], rss_open), samples)


def report(a, run_ids, got, seconds, all_open, rss, samples) -> None:
    from runs.api.serializers import RunEventOutput
    from runs.intake.selectors import run_events_after

    in_order = with_live = 0
    problems: list[str] = []
    streams = [(run_id, frames) for run_id, frames in
               zip([r for r in run_ids for _ in range(a.per_run)], got, strict=True)]
    stored_of: dict[str, list] = {}
    for run_id, frames in streams:
        if run_id not in stored_of:
            stored_of[run_id] = [RunEventOutput(e).data for e in
                                 run_events_after(run_id=run_id, after=0, limit=10_000)]
        stored = json.loads(json.dumps(stored_of[run_id]))
        try:
            assert [f.data for f in durable(frames)] == stored, "durable events"
            assert_turn_order(frames)
            in_order += 1
        except AssertionError as exc:
            problems.append(f"{run_id}: {str(exc)[:200]}")
        with_live += any(f.event == "message.delta" for f in frames)
    n = len(streams)
    print(f"hango followers benchmark  {time.strftime('%Y-%m-%d %H:%M:%S')}  cpus "
          f"{os.cpu_count()}  load {os.getloadavg()[0]:.2f}")
    print(f"{n} streams ({a.runs} runs x {a.per_run}) on gunicorn, 2 gevent workers; "
          f"{a.turns + 1} model calls a run x {a.latency_ms} ms, words {a.word_delay_ms} ms apart")
    print(f"  all streams open after {all_open:.1f} s; every run followed to its end after "
          f"{seconds:.1f} s")
    print(f"  streams with every event once, in order, deltas in their place: {in_order} / {n}"
          f" -> {'yes' if in_order == n else 'NO'}")
    print(f"  streams that got deltas: {with_live} / {n}")
    print(f"  web PostgreSQL connections: peak {max(samples['connections'], default=0)}, "
          f"median {st.median(samples['connections'] or [0]):.0f} (pool 10 per process)")
    print(f"  Redis connections subscribed to a run's channel: peak "
          f"{max(samples['subscribed'], default=0)}")
    print(f"  web RSS: {rss[0]:.0f} MiB before, {rss[1]:.0f} MiB with every stream open "
          f"({(rss[1] - rss[0]) / max(1, n) * 1024:.0f} KiB a stream), peak "
          f"{max(samples['rss'], default=0):.0f} MiB (both processes)")
    for line in problems[:5]:
        print(f"  problem: {line}")


if __name__ == "__main__":
    main()
