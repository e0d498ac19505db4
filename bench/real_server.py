"""hango against a real OpenAI-compatible server that no one here wrote: llama-cpp-python's
``llama_cpp.server`` serving Gemma 3 270M (both from PyPI, installed once under
``var/real-server/`` by :mod:`bench.real_server_stack`), driven end to end through hango as a
user starts it (``make serve``, ``make worker``) and its HTTP API. Prints a table of what passed;
exits non-zero when a check failed. How to run it and the last table: README.md ("A real model
server"). CI does not run it: the first build of llama.cpp takes ~15 minutes on 2 cores.

Each check is a row (name, passed / failed / n/a, detail): a streamed conversation answered, a
tool call's round trip streamed and whole (the worker restarted without live deltas), the
usage rows and their ``usage_source``, the quota's spend against them, the inspector's counts
against the server's own (``/extras/tokenize``, and the prompt tokens a call reports), the
context window the inspector uses, and a server killed mid-answer: the run fails resumably with
a short error, and once the server is back a resume completes.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.databases import ensure_database  # noqa: E402
from bench.real_server_checks import Checks  # noqa: E402
from bench.real_server_hango import Client, Stack, log_dir  # noqa: E402
from bench.real_server_stack import ALIAS, LlamaServer, install  # noqa: E402
from tests.support.servers import free_port  # noqa: E402

DEFAULT_DB = "postgres://postgres@127.0.0.1:5432/hango_bench_real"
DEFAULT_BROKER = "redis://127.0.0.1:6379/14"


def tenant(db: str, broker: str) -> tuple[Any, str]:
    """A tenant of the run's own, with a quota to watch (the operator's setting) and no rate
    limit; its owner's key."""
    os.environ.update({"DATABASE_URL": db, "CELERY_BROKER_URL": broker})
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hango_project.settings")
    import django

    django.setup()
    import redis
    from django.core.management import call_command

    from accounts.models import Tenant
    from accounts.services import tenant_bootstrap

    call_command("migrate", verbosity=0)
    redis.Redis.from_url(broker).flushdb()  # the run's own: no task left over
    issued = tenant_bootstrap(tenant_name=f"real-server-{time.time_ns()}",
                              email=f"real-{time.time_ns()}@server.test")
    tenant_id = issued.api_key.member.tenant_id
    Tenant.objects.filter(pk=tenant_id).update(rate_limit_per_minute=0,
                                               token_quota=100_000_000)
    return tenant_id, issued.plaintext


def report(rows: list[tuple[str, str, str]], seconds: float) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"hango against llama-cpp-python 0.3.36 + Gemma 3 270M "
                        f"({seconds:.0f} s)")
    for column in ("check", "result", "detail"):
        table.add_column(column, overflow="fold")
    for name, result, detail in rows:
        style = {"passed": "green", "failed": "red"}.get(result, "yellow")
        table.add_row(name, f"[{style}]{result}[/]", detail)
    Console(width=160).print(table)
    passed = sum(r == "passed" for _, r, _ in rows)
    failed = sum(r == "failed" for _, r, _ in rows)
    print(f"{passed} passed, {failed} failed, {len(rows) - passed - failed} n/a")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--db", default=os.environ.get("BENCH_REAL_DATABASE_URL", DEFAULT_DB))
    ap.add_argument("--broker", default=os.environ.get("BENCH_BROKER_URL", DEFAULT_BROKER),
                    help="a Redis database of the run's own (emptied)")
    ap.add_argument("--n-ctx", type=int, default=8192, help="the server's context window")
    ap.add_argument("--chat-format", default="gemma",
                    help="the server's chat format (the model's family's by default)")
    ap.add_argument("--install-only", action="store_true",
                    help="install the server and the model, then stop")
    a = ap.parse_args()
    began = time.monotonic()
    model = install()
    print(f"model: {model} ({time.monotonic() - began:.0f} s to install)", file=sys.stderr)
    if a.install_only:
        return
    ensure_database(a.db)
    tenant_id, key = tenant(a.db, a.broker)
    logs = log_dir("real-server-")
    print(f"logs: {logs}", file=sys.stderr, flush=True)
    server = LlamaServer(model, port=free_port(), n_ctx=a.n_ctx,
                         chat_format=a.chat_format, log_dir=logs)
    env = {**os.environ, "OPENAI_BASE_URL": f"{server.url}/v1", "HANGO_WORKER_PROCESSES": "1"}
    env.pop("OPENAI_API_KEY", None)  # a local server takes none
    stack = Stack(env=env, port=free_port(), log_dir=logs)
    checks = Checks(server=server, stack=stack, api=Client(stack.url, key), tenant=tenant_id,
                    model=f"openai:{ALIAS}")
    try:
        server.start()
        stack.start(processes=1)
        checks.run_all()
    finally:
        stack.stop()
        server.stop()
    report(checks.rows, time.monotonic() - began)
    sys.exit(1 if any(r == "failed" for _, r, _ in checks.rows) else 0)


if __name__ == "__main__":
    main()
