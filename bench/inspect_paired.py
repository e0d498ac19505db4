"""The inspector's HTTP latency against another revision's, paired in the same run.

This machine is shared and its speed drifts by a third within an hour, so an absolute figure
("30 ms at 1,000 messages") says as much about the hour as about the code. This script times
``GET /v1/sessions/{id}/context`` for the code of this checkout and of ``--baseline`` (a git
revision, checked out in a temporary worktree and removed after) in turns: each round runs one
fresh process per revision, model and size, in alternating order; a process makes its own
session of the shared workload's history (``bench_inspect.history``, with each message's stored
count where that revision stores counts), warms up, and prints the median of its requests. The
ratio current / baseline is taken per round, and its median is printed with its spread: at most
1.0 means the current code keeps the baseline's latency.

    .venv/bin/python bench/inspect_paired.py --baseline 9b18f6d            # ~6 min
    .venv/bin/python bench/inspect_paired.py --baseline HEAD~3 --sizes 1000 --rounds 12

Each revision gets a database of its own (``hango_bench_paired_<sha>``, migrated by that
revision's code).
"""

from __future__ import annotations

import argparse
import signal
import statistics as st
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SERVER = "postgres://postgres@127.0.0.1:5432"
CHILD = "--child"


def child(root: str, db: str, model: str, n: int, requests: int) -> None:
    """In this process: ``root``'s code, a session of ``n`` messages, ``requests`` timed GETs
    after a warm-up; their median in ms on stdout."""
    import os
    import uuid

    sys.path.insert(0, root)
    os.chdir(root)
    sys.path.insert(1, str(HERE))
    from bench_inspect import history  # this checkout's workload, whichever code runs
    from databases import ensure_database

    ensure_database(db)
    os.environ.update(DATABASE_URL=db, DJANGO_SETTINGS_MODULE="hango_project.settings",
                      HANGO_RATE_LIMIT_PER_MINUTE="0", OPENAI_API_KEY="bench-not-a-key",
                      ANTHROPIC_API_KEY="bench-not-a-key")
    import django

    django.setup()
    from django.core.management import call_command
    from django.test import Client

    call_command("migrate", verbosity=0)
    from accounts.services import api_key_issue, tenant_bootstrap
    from agents.services import agent_create
    from harness.messages import Message as HMessage
    from harness.serde import content_from_json
    from harness.tokens.tokenizers import tokenizer_for
    from runs.models import Message, Session

    member = tenant_bootstrap(tenant_name=f"paired-{uuid.uuid4().hex[:8]}",
                              email=f"{uuid.uuid4().hex[:8]}@bench.test").api_key.member
    client = Client(HTTP_AUTHORIZATION=f"Bearer {api_key_issue(member=member).plaintext}")
    agent = agent_create(member=member, data={"name": "bench", "model": model})
    session = Session.objects.create(tenant_id=member.tenant_id, agent=agent, member=member,
                                     title=f"{model} {n}")
    tokenizer = tokenizer_for(model)
    # A revision that stores each message's count (as its runs do) reads it back.
    key = getattr(tokenizer, "counts_key", None)
    stores = key is not None and any(f.name == "content_tokens" for f in Message._meta.fields)
    Message.objects.bulk_create([
        Message(session=session, seq=i, role=role, content=content, **(
            {"content_tokens": tokenizer.message(HMessage(role=role, content=content_from_json(
                content))), "tokens_counter": key} if stores else {}))
        for i, (role, content) in enumerate(history(n), start=1)])
    url = f"/v1/sessions/{session.pk}/context"
    for _ in range(5):
        assert client.get(url).status_code == 200
    ms = []
    for _ in range(requests):
        started = time.perf_counter()
        client.get(url)
        ms.append((time.perf_counter() - started) * 1000)
    print(f"{st.median(ms):.3f}")


def measure(root: Path, sha: str, model: str, n: int, requests: int) -> float:
    out = subprocess.run(
        [sys.executable, __file__, CHILD, str(root), f"{SERVER}/hango_bench_paired_{sha}",
         model, str(n), str(requests)], check=True, capture_output=True, text=True)
    return float(out.stdout.split()[-1])


def revision(ref: str, cwd: Path = ROOT) -> str:
    return subprocess.run(["git", "rev-parse", "--short=8", ref], cwd=cwd, check=True,
                          capture_output=True, text=True).stdout.strip()


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == CHILD:
        root, db, model, n, requests = sys.argv[2:7]
        child(root, db, model, int(n), int(requests))
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", required=True, help="a git revision to compare with")
    ap.add_argument("--sizes", default="1000,10000")
    ap.add_argument("--models", default="scripted:demo,openai:gpt-4o,anthropic:claude-sonnet-4-6")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--requests", type=int, default=30, help="timed GETs per process")
    a = ap.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")]
    models = a.models.split(",")
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                           check=True, capture_output=True, text=True).stdout.strip()
    head, base_sha = revision("HEAD"), revision(a.baseline)
    current = head + ("-dirty" if dirty else "")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # the worktree goes on a kill too
    with tempfile.TemporaryDirectory(prefix="inspect-paired-") as tmp:
        base = Path(tmp) / "baseline"
        subprocess.run(["git", "worktree", "add", "--detach", "-q", str(base), base_sha],
                       cwd=ROOT, check=True)
        try:
            cases = [(m, n) for m in models for n in sizes]
            times: dict[tuple[str, int], tuple[list[float], list[float]]] = {
                c: ([], []) for c in cases}
            revisions = [(0, ROOT, head), (1, base, base_sha)]  # into times[case][0] / [1]
            for r in range(a.rounds):
                for model, n in cases:
                    for which, root, sha in revisions if r % 2 == 0 else revisions[::-1]:
                        times[(model, n)][which].append(measure(root, sha, model, n,
                                                                a.requests))
                print(f"round {r + 1}/{a.rounds} done", file=sys.stderr)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=ROOT,
                           check=False)
    print(f"hango inspector, paired  {time.strftime('%Y-%m-%d %H:%M:%S')}  current {current}  "
          f"baseline {base_sha}  rounds {a.rounds} × {a.requests} requests")
    print("HTTP ms per inspection, medians of the rounds' medians (min-max); ratio = current / "
          "baseline per round, its median (min-max); <= 1.0 keeps the baseline's latency")
    print(f"{'model':30} {'messages':>8} {'current':>20} {'baseline':>20} {'ratio':>18}")
    for model, n in cases:
        now, before = times[(model, n)]
        ratios = [x / y for x, y in zip(now, before, strict=True)]
        print(f"{model:30} {n:>8} {st.median(now):>8.1f} ({min(now):.1f}-{max(now):.1f}) "
              f"{st.median(before):>8.1f} ({min(before):.1f}-{max(before):.1f}) "
              f"{st.median(ratios):>6.2f} ({min(ratios):.2f}-{max(ratios):.2f})")


if __name__ == "__main__":
    main()
