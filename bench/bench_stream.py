"""Live deltas benchmark; prints figures only (how to run it, what it means: README.md).

1. ``turns``: the durable turn with streaming on and off, interleaved: the worker service in
   this process on PostgreSQL (as ``bench_turns.py``'s durable mode), the shared workload, and
   with ``on`` every delta published to Redis, where a follower process subscribed to every
   run's channel counts them. ``--words N`` prefaces each of the workload's answers with N
   words of text, which the model streams word by word (0: the shared workload as it is).
2. ``first``: time to first delta from the message post, on a real stack: gunicorn and a Celery
   worker (processes of their own), the post over HTTP; the first delta as a subscriber that
   listens before the post receives it from Redis, and as an event stream opened once the post
   has answered shows it.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics as st
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_turns import Timed, per_turn_ms, thread_and_backend_cpu  # noqa: E402
from bench.databases import ensure_database  # noqa: E402
from harness.messages import Message, TextBlock  # noqa: E402
from harness.providers.scripted import stream_words  # noqa: E402

DEFAULT_DB = "postgres://postgres@127.0.0.1:5432/hango_bench_stream"
DEFAULT_REDIS = "redis://127.0.0.1:6379/9"
PATTERN = "hango:run:*:deltas"
PROMPT = "Run the benchmark task."
TARGET_RATIO = 1.05

# A follower in a process of its own: counts the deltas of every run until stdin closes.
FOLLOWER = """
import sys, threading, redis
pubsub = redis.Redis.from_url(sys.argv[1]).pubsub()
pubsub.psubscribe(sys.argv[2])
count = [0]
def read():
    for message in pubsub.listen():
        if message["type"] == "pmessage":
            count[0] += 1
        elif message["type"] == "psubscribe":
            print("ready", flush=True)
threading.Thread(target=read, daemon=True).start()
sys.stdin.read()
print(count[0], flush=True)
"""


def med(xs):
    return st.median(xs) if xs else float("nan")


def spread(xs) -> str:
    xs = sorted(xs)
    return f"{xs[0]:.3f}–{xs[-1]:.3f}" if xs else "-"


class Prose:
    """The workload's answers, each with ``words`` words of text first (what a model writes
    before it calls a tool), streamed word by word."""

    def __init__(self, inner, words: int, word_delay_ms: int = 0) -> None:
        self.inner, self.name, self.words = inner, inner.name, words
        self.word_delay_ms = word_delay_ms
        self.text = " ".join(f"word{i}" for i in range(words)) + " " if words else ""

    def complete(self, request):
        """The answer whole, as long in coming as its words streamed (a model's pace)."""
        response = self.answer(request)
        if self.word_delay_ms:
            for _ in range(len(list(stream_words(response))) - 1):  # its words, then the end
                time.sleep(self.word_delay_ms / 1000)
        return response

    def answer(self, request):
        response = self.inner.complete(request)
        if not self.text:
            return response
        content = (TextBlock(text=self.text), *response.message.content)
        return replace(response, message=Message(role="assistant", content=content))

    def stream(self, request):
        return stream_words(self.answer(request), word_delay_ms=self.word_delay_ms)


class Turns:
    """The worker service on PostgreSQL, streaming on or off per run (bench_turns' durable)."""

    def __init__(self, db: str, redis_url: str, turns: int, words: int,
                 word_delay_ms: int) -> None:
        ensure_database(db)
        os.environ.update(DATABASE_URL=db, HANGO_RUN_INLINE="0", HANGO_LIVE_REDIS_URL=redis_url)
        for variable in ("CELERY_BROKER_URL", "HANGO_BROKER_URL"):
            os.environ.pop(variable, None)
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hango_project.settings")
        import django

        django.setup()
        from django.conf import settings
        from django.core.management import call_command
        from django.db import connection

        from accounts.services import tenant_bootstrap
        from agents.services import agent_create
        from harness.providers import registry
        from runs.execution import tasks, worker
        from runs.intake import services

        call_command("migrate", verbosity=0)
        tasks.enqueue_run = lambda run_id: None  # this process executes each run itself
        model = f"scripted:workload-{turns}"
        real = registry.factory("scripted")
        assert real is not None
        registry.add(model, lambda name, knobs: self.wrap(
            Prose(real(name, knobs), words, word_delay_ms)))
        self.settings, self.base = settings, settings.HANGO
        self.turns, self.words = turns, words
        self.connection, self.services, self.worker = connection, services, worker
        self.member = tenant_bootstrap(tenant_name="bench-stream",
                                       email="bench@stream.test").api_key.member
        self.agent = agent_create(member=self.member, data={
            "name": f"bench-stream-{turns}", "model": model, "config": {"max_turns": turns + 1}})

    def wrap(self, provider) -> Timed:
        self.timed = Timed(provider, cpu=self.cpu)
        return self.timed

    def cpu(self) -> float:
        return thread_and_backend_cpu(self.connection)

    def run(self, streaming: bool) -> dict:
        self.settings.HANGO = self.base.replace(stream_deltas=streaming)
        session = self.services.session_create(member=self.member, agent=self.agent)
        _, run = self.services.message_post(session=session, content=PROMPT)
        started = time.perf_counter()
        outcome = self.worker.execute_run(str(run.id))
        assert outcome == "completed", outcome
        return self.timed.result(self.turns, started)


def bench_turns(a) -> None:
    pattern = PATTERN if a.follower else "nobody:follows:*"
    subscriber = subprocess.Popen([sys.executable, "-c", FOLLOWER, a.redis, pattern],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert subscriber.stdout is not None and subscriber.stdin is not None
    assert subscriber.stdout.readline().strip() == "ready"
    bench = Turns(a.db, "" if a.local else a.redis, a.turns, a.words, a.word_delay_ms)
    modes = {"off": False, "on": True}
    for streaming in modes.values():  # warm-up
        bench.run(streaming)
    gc.collect()
    raw: dict[str, list[dict]] = {m: [] for m in modes}
    order = list(modes)
    for rep in range(a.reps):
        for mode in order[rep % 2:] + order[:rep % 2]:
            raw[mode].append(bench.run(modes[mode]))
    subscriber.stdin.close()
    received = int(subscriber.stdout.readline())
    subscriber.wait()

    deltas_per_run = (a.turns + 1) * a.words + 4  # the final answer has four words more
    print(f"\n== durable turn, streaming off vs on: T={a.turns}, {a.words} words before each "
          f"call, {a.word_delay_ms} ms apart, {a.reps} reps interleaved "
          f"({deltas_per_run / a.turns:.1f} deltas/turn), "
          f"{'in-process' if a.local else 'through Redis'}, "
          f"{'a follower process subscribed' if a.follower else 'nobody subscribed'} ==")
    print(f"{'mode':<5} {'turn ms':>8} {'spread':>13} {'turn p50':>8} {'call->call':>10} "
          f"{'spread':>13} {'cpu ms':>7}")
    figures = {}
    for mode, runs in raw.items():
        turn = [per_turn_ms(r["turns"]) for r in runs]
        typical = [1e3 * med(r["turns"]) for r in runs]
        c2c = [per_turn_ms(r["call_to_call"]) for r in runs]
        cpu = [per_turn_ms(r["cpu"]) for r in runs]
        figures[mode] = (med(turn), med(c2c), med(cpu))
        print(f"{mode:<5} {med(turn):8.3f} {spread(turn):>13} {med(typical):8.3f} "
              f"{med(c2c):10.3f} {spread(c2c):>13} {med(cpu):7.3f}")
    print("(turn: exit of a model call -> entry to the next, the durable turn; per run its mean "
          "(turn ms) or median (turn p50) over its turns, then the median over runs; call->call "
          "adds the model call, where the deltas are sent; cpu: this thread and its PostgreSQL "
          "backend, per turn)")
    c_off, c_on = figures["off"][1], figures["on"][1]

    def paired(key, of):
        # Each rep's two runs ran back to back: their ratio is less exposed to the drift.
        return sorted(of(on[key]) / of(off[key])
                      for on, off in zip(raw["on"], raw["off"], strict=True))

    for label, ratios in (("turn", paired("turns", per_turn_ms)),
                          ("turn p50", paired("turns", med)),
                          ("cpu", paired("cpu", per_turn_ms))):
        ratio = med(ratios)
        print(f"on/off per rep, {label:<8}: median {ratio:.3f}, quartiles "
              f"{ratios[len(ratios) // 4]:.3f}–{ratios[(3 * len(ratios)) // 4]:.3f} "
              f"(target <= {TARGET_RATIO}: {'yes' if ratio <= TARGET_RATIO else 'NO'})")
    if a.word_delay_ms:
        print("(call->call: 'on' holds the words' pacing, 'off' answers at once)")
    else:
        print(f"streaming adds {1e3 * (c_on - c_off) * a.turns / deltas_per_run:.1f} µs per "
              "delta to the model call (call->call on - off, per delta)")
    markers = a.turns + 3  # a run's: queued, claimed, then one a committed turn
    expected = (a.reps + 1) * (deltas_per_run + markers)
    print(f"the follower process received {received} messages ({expected} published by the "
          "'on' runs: deltas and commit markers)")


def bench_first(a) -> None:
    from tests.support.servers import GunicornProcess, stop_group
    from tests.support.sse import frames_of

    ensure_database(a.db)
    env = {"DATABASE_URL": a.db, "CELERY_BROKER_URL": a.redis, "HANGO_RUN_INLINE": "0",
           "HANGO_LIVE_REDIS_URL": a.redis, "HANGO_EVENT_POLL_SECONDS": "0.1",
           "HANGO_SCRIPTED_WORD_DELAY_MS": str(a.word_delay_ms),
           "DJANGO_SETTINGS_MODULE": "hango_project.settings"}
    os.environ.update(env)
    import django

    django.setup()
    import httpx
    import redis
    from django.core.management import call_command

    from accounts.services import tenant_bootstrap
    from agents.services import agent_create

    call_command("migrate", verbosity=0)
    client = redis.Redis.from_url(a.redis)
    client.delete("runs", "unacked", "unacked_index")
    issued = tenant_bootstrap(tenant_name="bench-first", email="bench@first.test")
    agent = agent_create(member=issued.api_key.member,
                         data={"name": "bench-first", "model": "scripted:demo"})
    logs = Path(tempfile.mkdtemp(prefix="bench-stream-"))
    web = GunicornProcess(logs, database_url=a.db, env=env, threads=4)
    with open(logs / "worker.log", "w") as log:
        worker = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "hango_project", "worker", "--pool", "solo",
             "--loglevel", "INFO", "-Q", "runs", "--without-mingle", "--without-gossip"],
            cwd=ROOT, env={**os.environ, **env}, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True)
    first_seen: dict[str, float] = {}
    pubsub = client.pubsub()
    pubsub.psubscribe(PATTERN)
    done = threading.Event()

    def listen() -> None:
        while not done.is_set():
            message = pubsub.get_message(timeout=0.1)
            if message is not None and message["type"] == "pmessage":
                run = json.loads(message["data"])["run"]
                first_seen.setdefault(run, time.perf_counter())

    listener = threading.Thread(target=listen, daemon=True)
    listener.start()
    headers = {"Authorization": f"Bearer {issued.plaintext}"}
    rows = []
    try:
        with httpx.Client(base_url=web.url, headers=headers, timeout=30) as http:
            for rep in range(a.reps + 1):  # the first is a warm-up
                session = http.post("/v1/sessions", json={"agent": str(agent.id)}).json()
                posted_at = time.perf_counter()
                answer = http.post(f"/v1/sessions/{session['id']}/messages",
                                   json={"content": "count these four words"})
                answered_at = time.perf_counter()
                run_id = answer.json()["run"]["id"]
                sse_first = None
                with http.stream("GET", f"/v1/runs/{run_id}/events",
                                 headers={"Accept": "text/event-stream"}) as stream:
                    for frame in frames_of(stream.iter_lines()):
                        if frame.event == "message.delta" and sse_first is None:
                            sse_first = (time.perf_counter(), frame.data["turn"],
                                         frame.data["index"])
                if rep:
                    rows.append((answered_at - posted_at, first_seen.get(run_id, posted_at)
                                 - posted_at, sse_first and (sse_first[0] - posted_at),
                                 sse_first is not None and sse_first[1:] == (1, 0)))
    finally:
        done.set()
        listener.join()
        pubsub.close()
        stop_group(worker)
        web.stop()
    post, sub, sse, caught = (list(x) for x in zip(*rows, strict=True))
    print(f"\n== time to first delta from the message post: {len(rows)} runs of scripted:demo "
          f"(words {a.word_delay_ms} ms apart), gunicorn + a solo Celery worker + Redis ==")
    for label, xs in (("post -> 202", post), ("post -> first delta at a subscriber", sub),
                      ("post -> first delta on the run's SSE", [x for x in sse if x])):
        ms = [1e3 * x for x in xs]
        print(f"{label:<40} median {med(ms):7.2f} ms   min {min(ms):7.2f}   "
              f"max {max(ms):7.2f}")
    print(f"the stream, opened after the 202, caught the run's first word in "
          f"{sum(caught)}/{len(rows)} runs, some later delta in "
          f"{sum(1 for x, c in zip(sse, caught, strict=True) if x and not c)}, none in "
          f"{sum(1 for x in sse if not x)} (the run had written every word before it "
          "subscribed)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("parts", nargs="*", default=["turns", "first"], choices=["turns", "first"])
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--turns", type=int, default=20)
    ap.add_argument("--words", type=int, default=0)
    ap.add_argument("--word-delay-ms", type=int, default=0)
    ap.add_argument("--local", action="store_true",
                    help="turns: deltas through this process, not Redis (the quickstart's way)")
    ap.add_argument("--no-follower", dest="follower", action="store_false",
                    help="turns: nobody subscribes (Redis drops each delta at once)")
    ap.add_argument("--db", default=os.environ.get("BENCH_DATABASE_URL", DEFAULT_DB))
    ap.add_argument("--redis", default=os.environ.get("BENCH_REDIS_URL", DEFAULT_REDIS))
    a = ap.parse_args()
    print(f"hango live-delta benchmark  {time.strftime('%Y-%m-%d %H:%M:%S')}  python "
          f"{sys.version.split()[0]}  cpus {os.cpu_count()}  load {os.getloadavg()[0]:.2f}")
    if "turns" in a.parts:
        bench_turns(a)
    if "first" in a.parts:
        bench_first(a)


if __name__ == "__main__":
    main()
