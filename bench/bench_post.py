"""What a message post costs the web tier, over HTTP, against its floor; and N runs posted
over HTTP end to end. Prints figures only; how to run it and the targets: README.md ("A post
over HTTP").

hango is served as ``make serve`` serves it (the Makefile's gunicorn: two gevent workers), on
the benchmark's own database and Redis database; ``--clients`` threads, each with a keep-alive
connection, post one message to each of fresh sessions (``POST /v1/sessions/{id}/messages``).
The web processes' CPU (every process under ``make serve``: the gunicorn master and its
workers, read from /proc before and after the posts, a warm-up aside) divided by the posts is
the CPU of a post; the database's backends (``pg_stat_activity`` of the benchmark's database)
are counted apart. The floor (:mod:`bench.post_floor`) is served by the same command with the
benchmark's settings module, on the same database and broker, and measured the same way in the
same invocation, one server at a time.

``--runs N`` (the end-to-end mode) starts the worker too (one gevent process per CPU, as ``make
worker``, with bench_concurrency's stamp of each run's first model call) and posts N runs of
``--turns`` + 1 scripted calls of ``--latency-ms`` each: wall time to the last run's end
against the ideal, and how long after its post each run's first model call went out.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics as st
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.sampling import cpu_seconds, pct  # noqa: E402
from tests.support.servers import stop_group  # noqa: E402

DEFAULT_DB = "postgres://postgres@127.0.0.1:5432/hango_bench_post"
DEFAULT_BROKER = "redis://127.0.0.1:6379/11"
PROMPT = "Run the benchmark task. #"


def descendants(pid: int) -> list[int]:
    """``pid`` and every process below it (from /proc's parent links)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        found.append(todo.pop())
        todo.extend(children.get(found[-1], []))
    return found


class Server:
    """``make serve`` on ``port``, with ``settings`` (None: hango's own)."""

    def __init__(self, port: int, env: dict[str, str], settings: str | None = None) -> None:
        self.port = port
        self.log = tempfile.NamedTemporaryFile("w+", prefix=f"bench-post-{port}-", delete=False)
        env = {**os.environ, **env}
        env.pop("DJANGO_SETTINGS_MODULE", None)
        if settings:
            env["DJANGO_SETTINGS_MODULE"] = settings
        self.proc = subprocess.Popen(["make", "--no-print-directory", "serve", f"PORT={port}"],
                                     cwd=ROOT, env=env, stdout=self.log,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 120
        while "Booting worker" not in Path(self.log.name).read_text() or not self._up():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"make serve did not start:\n{Path(self.log.name).read_text()}")
            time.sleep(0.2)

    def _up(self) -> bool:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
            conn.request("GET", "/v1/")
            conn.getresponse().read()
            return True
        except OSError:
            return False

    def cpu(self) -> float:
        return sum(cpu_seconds(pid) for pid in descendants(self.proc.pid))

    def stop(self) -> None:
        stop_group(self.proc, timeout=30)


def post_all(port: int, key: str, sessions: list[str], texts: list[str],
             clients: int) -> list[tuple[int, str, float, float]]:
    """Each text posted to its session by ``clients`` keep-alive threads; (the text's index,
    run id, when sent, seconds to the answer) per post, in no order. A post that is not a 202
    stops the benchmark."""
    out: list[tuple[int, str, float, float]] = []
    failed: list[str] = []
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}

    def client(k: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        for i in range(k, len(texts), clients):
            session, text = sessions[i], texts[i]
            sent = time.time()
            conn.request("POST", f"/v1/sessions/{session}/messages",
                         json.dumps({"content": text}), headers)
            answer = conn.getresponse()
            body = answer.read()
            if answer.status != 202:
                failed.append(f"{answer.status} {body[:300]!r}")
                return
            out.append((i, json.loads(body)["run"]["id"], sent, time.time() - sent))
        conn.close()

    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failed:
        raise SystemExit(f"{len(failed)} posts failed, the first: {failed[0]}")
    return out



class Bench:
    """The benchmark's tenant, agent and fresh sessions, on hango's Django (bench_concurrency's
    :class:`~bench.bench_concurrency.Hango`: its database, broker and worker processes)."""

    def __init__(self, a: argparse.Namespace) -> None:
        from bench.bench_concurrency import Hango

        self.a = a
        self.hango = Hango(a.db, a.broker, a.turns, a.latency_ms, a.concurrency, 10,
                           a.processes)
        self.env = {**self.hango.env, "HANGO_RATE_LIMIT_PER_MINUTE": "100000000"}
        self.name = a.db.split("?")[0].rsplit("/", 1)[1]

    def sessions(self, n: int) -> list[str]:
        from runs.models import Session

        made = [Session(tenant_id=self.hango.member.tenant_id, agent_id=self.hango.agent.pk,
                        member=self.hango.member) for _ in range(n)]
        Session.objects.bulk_create(made, batch_size=1000)
        return [str(s.pk) for s in made]

    def backends(self) -> list[int]:
        """The PostgreSQL backends of the benchmark's database, this process's aside."""
        with self.hango.connection.cursor() as cur:
            cur.execute("SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> "
                        "pg_backend_pid()", [self.name])
            return [pid for (pid,) in cur.fetchall()]

    def post(self, port: int, n: int, tag: str) -> list[tuple[int, str, float, float]]:
        texts = [f"{PROMPT}{tag}-{k}" for k in range(n)]
        out = post_all(port, self.hango.key, self.sessions(n), texts, self.a.clients)
        self.hango.tags.update({f"{tag}-{k}": run_id for k, run_id, _, _ in out})
        return out

    def cpu_round(self, system: str, settings: str | None) -> dict:
        """``--posts`` posts to ``system``'s server, after a warm-up: CPU ms a post."""
        server = Server(self.a.port, self.env, settings)
        try:
            self.post(server.port, self.a.warm, f"warm{time.time_ns()}")
            pg = {pid: cpu_seconds(pid) for pid in self.backends()}
            web, started = server.cpu(), time.time()
            out = self.post(server.port, self.a.posts, f"{system}{time.time_ns()}")
            wall, web = time.time() - started, server.cpu() - web
            pg_spent = sum(cpu_seconds(pid) - pg.get(pid, 0.0) for pid in self.backends())
        finally:
            server.stop()
        self.settle()
        latency = [x[3] for x in out]
        return {"system": system, "posts": len(out), "web_ms": web * 1000 / len(out),
                "pg_ms": pg_spent * 1000 / len(out), "posts_per_s": len(out) / wall,
                "p50_ms": st.median(latency) * 1000, "p99_ms": pct(latency, 99) * 1000}

    def settle(self) -> None:
        """The runs the CPU rounds queued, cancelled, and their tasks dropped: no worker, nor a
        later round's, picks them up."""
        from django.utils import timezone

        from runs.models import Run

        Run.objects.filter(session__tenant_id=self.hango.member.tenant_id,
                           status__in=("queued", "pending")).update(
            status="cancelled", finished_at=timezone.now())
        self.hango.redis.flushdb()

    def end_to_end(self) -> dict:
        """``--runs`` runs posted over HTTP with the workers up; wall time and first calls."""
        from bench.post_stages import Stages
        from bench.sampling import CpuMeter
        from runs.models import Run

        stages = Stages()  # the workers' stamps of each run's stages (bench/stage_hooks.py)
        self.hango.start()  # the workers, warmed
        server = Server(self.a.port, self.env)
        try:
            warm = [run_id for _, run_id, _, _ in
                    self.post(server.port, self.a.warm, f"warm{time.time_ns()}")]
            while Run.objects.filter(pk__in=warm, finished_at__isnull=True).exists():
                time.sleep(0.2)  # the warm-up's runs end before the clock starts
            meter = CpuMeter({"web": lambda: descendants(server.proc.pid),
                              "worker": self.hango.worker_pids,
                              "postgres": self.backends}).start()
            started = time.time()
            out = self.post(server.port, self.a.runs, f"e2e{time.time_ns()}")
            posted = time.time() - started
            ids = [run_id for _, run_id, _, _ in out]
            while Run.objects.filter(pk__in=ids, finished_at__isnull=True).exists():
                time.sleep(0.2)
            cpu = meter.stop()
        finally:
            server.stop()
            firsts = self.hango.stop()
        rows = list(Run.objects.filter(pk__in=ids).values_list("status", "finished_at"))
        wall = max(f.timestamp() for _, f in rows) - started
        to_first = [firsts[run_id] - sent for _, run_id, sent, _ in out if run_id in firsts]
        ideal = (self.a.turns + 1) * self.a.latency_ms / 1000
        return {"runs": len(ids), "completed": sum(s == "completed" for s, _ in rows),
                "posted_s": posted, "wall_s": wall, "ideal_s": ideal, "ratio": wall / ideal,
                "first_p50": st.median(to_first), "first_p99": pct(to_first, 99),
                "stamps": len(to_first), "stages": stages.report(out),
                **{f"cpu_ms_{k}": v * 1000 / len(ids) for k, v in cpu.items()}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--posts", type=int, default=1000, help="posts per system (0: none)")
    ap.add_argument("--warm", type=int, default=64, help="posts before the clock, per server")
    ap.add_argument("--clients", type=int, default=16, help="keep-alive client threads")
    ap.add_argument("--runs", type=int, default=0,
                    help="then N runs posted over HTTP with the workers up (end to end)")
    ap.add_argument("--turns", type=int, default=4, help="a run makes turns + 1 model calls")
    ap.add_argument("--latency-ms", type=int, default=2000, help="each model call's latency")
    ap.add_argument("--concurrency", type=int, default=1000, help="HANGO_WORKER_CONCURRENCY")
    ap.add_argument("--processes", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--port", type=int, default=8471)
    ap.add_argument("--no-floor", action="store_true", help="hango's post only")
    ap.add_argument("--db", default=os.environ.get("BENCH_POST_DATABASE_URL", DEFAULT_DB))
    ap.add_argument("--broker", default=os.environ.get("BENCH_BROKER_URL", DEFAULT_BROKER),
                    help="a Redis database of the benchmark's own (it is emptied)")
    a = ap.parse_args()
    bench = Bench(a)
    print(f"hango post benchmark  {time.strftime('%Y-%m-%d %H:%M:%S')}  cpus "
          f"{len(os.sched_getaffinity(0))}  load {os.getloadavg()[0]:.2f}  {a.clients} "
          f"keep-alive clients, over HTTP to make serve", flush=True)
    rows = []
    if a.posts:
        rows.append(bench.cpu_round("hango", None))
        if not a.no_floor:
            rows.append(bench.cpu_round("floor", "bench.post_floor_settings"))
        print(f"{'system':<8} {'posts':>6} {'web ms/post':>11} {'pg ms/post':>10} "
              f"{'posts/s':>8} {'p50 ms':>7} {'p99 ms':>7}")
        for r in rows:
            print(f"{r['system']:<8} {r['posts']:>6} {r['web_ms']:>11.2f} {r['pg_ms']:>10.2f} "
                  f"{r['posts_per_s']:>8.1f} {r['p50_ms']:>7.1f} {r['p99_ms']:>7.1f}")
        if len(rows) == 2:
            ratio = rows[0]["web_ms"] / rows[1]["web_ms"]
            print(f"web CPU a post, hango / floor: {ratio:.2f} (target <= 1.5: "
                  f"{'yes' if ratio <= 1.5 else 'NO'})")
    if a.runs:
        e = bench.end_to_end()
        print(f"{e['runs']} runs posted over HTTP in {e['posted_s']:.1f} s, {e['completed']} "
              f"completed; wall {e['wall_s']:.1f} s = {e['ratio']:.2f}x ideal "
              f"({e['ideal_s']:.0f} s; target <= 1.3); first model call after its post p50 "
              f"{e['first_p50']:.2f} s, p99 {e['first_p99']:.2f} s (target <= 1 s, "
              f"{e['stamps']} stamped); CPU ms a run: web {e['cpu_ms_web']:.1f}, worker "
              f"{e['cpu_ms_worker']:.1f}, postgres {e['cpu_ms_postgres']:.1f}")
        print(e["stages"])
    print(f"load {os.getloadavg()[0]:.2f} at the end", flush=True)


if __name__ == "__main__":
    main()
