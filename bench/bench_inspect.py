"""Context inspector latency: GET /v1/sessions/{id}/context for sessions of 100, 1,000 and
10,000 messages; prints figures only (README.md says how to read them).

Three measures per size: the snapshot service alone (``inspector.selectors.context_snapshot``:
the loop built, the history loaded, two assemblies through the chain when overrides apply, the
parts counted); the same after dropping the process's shared decoded messages (``decoding``:
a web process's first look at a session); and the whole HTTP request through Django's test
client (authentication, serialisation, rendering); and the first inspection in a fresh
process (``cold``: the tokenizer loaded, nothing counted or decoded yet), on rows that carry each
message's count as a run stores it, and on rows without counts (``uncounted``: messages no run
wrote). Models: the offline estimate
(``scripted:demo``), o200k (``openai:gpt-4o``) and Claude's tokenizer
(``anthropic:claude-sonnet-4-6``); no model is ever called. Sizes and models are interleaved and
repeated; medians with min and max are printed, and the time per message at 10,000 over the
time per message at 1,000 (growth: at most 1.0 means the latency does not grow faster than the
history).
"""

from __future__ import annotations

import argparse
import os
import statistics as st
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.databases import ensure_database  # noqa: E402

DEFAULT_DB = "postgres://postgres@127.0.0.1:5432/hango_bench"
SIZES = (100, 1_000, 10_000)
MODELS = ("scripted:demo", "openai:gpt-4o", "anthropic:claude-sonnet-4-6")
TARGET_MS = {1_000: 30.0, 10_000: 300.0}
COLD_TARGET_MS = {10_000: 1_000.0}
COLD = "--cold-child"  # the child process's mode: one inspection of one session, timed


def history(n: int) -> list[tuple[str, list[dict]]]:
    """A conversation of ``n`` messages: a question, a tool call, its result, an answer."""
    out: list[tuple[str, list[dict]]] = []
    i = 0
    while len(out) < n:
        i += 1
        out += [
            ("user", [{"type": "text", "text": f"Look up ticket {i}: who owns it, and is it "
                                               "still open? Keep the answer short."}]),
            ("assistant", [{"type": "text", "text": "Looking it up."},
                           {"type": "tool_use", "id": f"call_{i}", "name": "echo",
                            "input": {"text": f"ticket {i} status"}}]),
            ("user", [{"type": "tool_result", "tool_use_id": f"call_{i}", "is_error": False,
                       "content": f"ticket {i}: open, owned by team {i % 7}, last touched "
                                  f"2026-11-{i % 28 + 1:02d}, 3 comments"}]),
            ("assistant", [{"type": "text", "text": f"Ticket {i} is open; team {i % 7} owns "
                                                    "it."}]),
        ]
    return out[:n]


def setup(url: str) -> None:
    ensure_database(url)
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hango_project.settings")
    os.environ["HANGO_RATE_LIMIT_PER_MINUTE"] = "0"  # the bench's own requests are not limited
    # Keys so the adapters can be built; the inspector never calls them.
    os.environ.setdefault("OPENAI_API_KEY", "bench-not-a-key")
    os.environ.setdefault("ANTHROPIC_API_KEY", "bench-not-a-key")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def timed(fn, reps: int) -> list[float]:
    out = []
    for _ in range(reps):
        started = time.perf_counter()
        fn()
        out.append((time.perf_counter() - started) * 1000)
    return out


def cold_child(db: str, warm_up: str, session_id: str) -> None:
    """In a fresh process: one inspection of ``warm_up`` (a small session of the same model:
    the process imports its provider's SDK and loads the tokenizer, as a web process does on
    its first request of any session), then the first inspection of the session; both in ms
    on stdout."""
    setup(db)
    from inspector.selectors import context_snapshot
    from runs.models import Session

    out = []
    for pk in (warm_up, session_id):
        session = Session.objects.select_related("agent", "tenant").get(pk=pk)
        started = time.perf_counter()
        context_snapshot(session=session)
        out.append(f"{(time.perf_counter() - started) * 1000:.1f}")
    print(*out)


def cold(db: str, warm_up: object, session_id: object) -> tuple[float, float]:
    """(the process's first inspection, of ``warm_up``; the session's first, after it)."""
    out = subprocess.run([sys.executable, __file__, COLD, "--db", db, str(warm_up),
                          str(session_id)], check=True, capture_output=True, text=True)
    start, first = out.stdout.split()[-2:]
    return float(start), float(first)


def stored_rows(session: object, model: str, n: int, *, counted: bool) -> list:
    """The session's message rows; ``counted``, each with its count as a run stores it (the
    worker's DbCheckpointer: the content count under the tokenizer's counts key)."""
    from harness.messages import Message as HMessage
    from harness.serde import content_from_json
    from harness.tokens.tokenizers import tokenizer_for
    from runs.models import Message

    tokenizer = tokenizer_for(model)
    key = tokenizer.counts_key if counted else None
    return [Message(session=session, seq=i, role=role, content=content,
                    content_tokens=tokenizer.message(HMessage(
                        role=role, content=content_from_json(content))) if key else None,
                    tokens_counter=key or "")
            for i, (role, content) in enumerate(history(n), start=1)]


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == COLD:
        cold_child(sys.argv[3], sys.argv[4], sys.argv[5])
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=7, help="rounds; each times every case once")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--db", default=os.environ.get("BENCH_DATABASE_URL", DEFAULT_DB))
    ap.add_argument("--cold-reps", type=int, default=3,
                    help="fresh processes per case for the first inspection")
    a = ap.parse_args()
    setup(a.db)

    from django.test import Client

    from accounts.services import api_key_issue, tenant_bootstrap
    from agents.services import agent_create
    from inspector.selectors import context_snapshot
    from runs.execution import history as stored
    from runs.models import Message, Session

    member = tenant_bootstrap(tenant_name=f"bench-{uuid.uuid4().hex[:8]}",
                              email=f"{uuid.uuid4().hex[:8]}@bench.test").api_key.member
    client = Client(HTTP_AUTHORIZATION=f"Bearer {api_key_issue(member=member).plaintext}")
    cases, uncounted = [], {}
    for model in a.models.split(","):
        agent = agent_create(member=member, data={"name": "bench", "model": model})
        for n in SIZES:
            for counted in (False, True):
                session = Session.objects.create(tenant_id=member.tenant_id, agent=agent,
                                                 member=member, title=f"{model} {n}")
                Message.objects.bulk_create(stored_rows(session, model, n, counted=counted))
                if counted:
                    cases.append((model, n, session))
                else:
                    uncounted[(model, n)] = session
    # Each first look in a process of its own (warmed up on another session of the model: a
    # twin of 100 messages); the two kinds of rows interleaved.
    first: dict[tuple[str, int], list[float]] = {(m, n): [] for m, n, _ in cases}
    first_uncounted: dict[tuple[str, int], list[float]] = {(m, n): [] for m, n, _ in cases}
    starts: dict[str, list[float]] = {m: [] for m, _, _ in cases}
    warm_ups = {model: session for model, n, session in cases if n == SIZES[0]}
    for _ in range(a.cold_reps):
        for model, n, session in cases:
            if n == SIZES[0]:
                continue
            for rows, into in ((session, first), (uncounted[(model, n)], first_uncounted)):
                start, ms = cold(a.db, warm_ups[model].pk, rows.pk)
                starts[model].append(start)
                into[(model, n)].append(ms)
    stored.drop_shared_messages()

    service: dict[tuple[str, int], list[float]] = {(m, n): [] for m, n, _ in cases}
    decoding: dict[tuple[str, int], list[float]] = {(m, n): [] for m, n, _ in cases}
    http: dict[tuple[str, int], list[float]] = {(m, n): [] for m, n, _ in cases}
    for rep in range(a.reps):
        for model, n, session in (cases if rep % 2 == 0 else cases[::-1]):
            # A web process's first look at the session: every message decoded (the counts'
            # content caches stay warm, as they are for any text the process counted before).
            stored.drop_shared_messages()
            decoding[(model, n)] += timed(lambda s=session: context_snapshot(session=s), 1)
            service[(model, n)] += timed(lambda s=session: context_snapshot(session=s), 1)
            response = None

            def get(s=session) -> None:
                nonlocal response
                response = client.get(f"/v1/sessions/{s.pk}/context")

            http[(model, n)] += timed(get, 1)
            assert response is not None and response.status_code == 200, response
        print(f"round {rep + 1}/{a.reps} done", file=sys.stderr)

    print(f"hango context inspector benchmark  {time.strftime('%Y-%m-%d %H:%M:%S')}  "
          f"cpus {os.cpu_count()}  load {os.getloadavg()[0]:.2f}  rounds {a.reps}")
    print("ms per inspection: median (min-max)")
    print("cold = a process's first inspection of the session, after one of another session "
          "(its SDK imported, its tokenizer loaded), on rows carrying the counts a run stores; "
          "uncounted = on rows without them")
    for model, ms in starts.items():
        if ms:
            print(f"  a fresh process's first inspection ({model}, 100 messages): "
                  f"{st.median(ms):.0f} ms ({min(ms):.0f}-{max(ms):.0f})")
    print("decoding = the service with the process's shared messages dropped first")
    print(f"{'model':30} {'messages':>8} {'cold':>22} {'uncounted':>22} {'met':>4} "
          f"{'decoding':>22} {'service':>22} {'http':>22} {'target':>7} {'met':>4}")
    for model, n, _ in cases:
        d, s, h = decoding[(model, n)], service[(model, n)], http[(model, n)]
        c, u = first[(model, n)] or [float("nan")], first_uncounted[(model, n)] or [float("nan")]
        target, cold_target = TARGET_MS.get(n), COLD_TARGET_MS.get(n)
        met = "" if target is None else ("yes" if st.median(h) <= target else "no")
        cold_met = "" if cold_target is None else ("yes" if st.median(c) <= cold_target
                                                   else "no")
        print(f"{model:30} {n:>8} "
              f"{st.median(c):>8.1f} ({min(c):.1f}-{max(c):.1f}){'':>2} "
              f"{st.median(u):>8.1f} ({min(u):.1f}-{max(u):.1f}){'':>2} {cold_met:>4} "
              f"{st.median(d):>8.1f} ({min(d):.1f}-{max(d):.1f}){'':>2} "
              f"{st.median(s):>8.1f} ({min(s):.1f}-{max(s):.1f}){'':>2} "
              f"{st.median(h):>8.1f} ({min(h):.1f}-{max(h):.1f}){'':>2} "
              f"{'' if target is None else f'<= {target:g}':>7} {met:>4}")
    print("growth (per-message time at 10,000 / at 1,000; <= 1.0: no faster than the history):")
    for model in a.models.split(","):
        for label, series in (("service", service), ("http", http)):
            small, large = st.median(series[(model, 1_000)]), st.median(series[(model, 10_000)])
            print(f"  {model:30} {label:8} {large / 10_000 / (small / 1_000):.2f}")


if __name__ == "__main__":
    main()
