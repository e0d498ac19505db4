"""hango started as a user starts it, for ``bench_mcp.py``: ``make serve`` and ``make worker``,
each a process group of its own logging to a file, their processes found under make's (their
CPU, their RSS), and stopped as Ctrl-C would stop them.

The environment is the caller's plus what a deployment beside an MCP server on loopback needs:
the database, the broker and ``HANGO_MCP_ALLOW_PRIVATE=1``. ``PGAPPNAME`` (read by libpq, not
by hango) names each tier's PostgreSQL connections, so the benchmark can count them apart.
:class:`Api` is the tenant owner's HTTP client of it, a keep-alive connection per thread.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from bench.faults_stack import alive, children

ROOT = Path(__file__).resolve().parent.parent
SERVER = "bench"  # the MCP server's name: its tool is bench__slow in a run
SENDERS = 2  # make serve's web processes, which hand runs over
WEB_APP = "hango-bench-mcp-web"
WORKER_APP = "hango-bench-mcp-worker"


def descendants(pid: int) -> list[int]:
    """Every live process below ``pid``."""
    found, todo = [], children(pid)
    while todo:
        child = todo.pop()
        found.append(child)
        todo += children(child)
    return found


def command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def rss_mib(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status") as f:
                total += int(next(x for x in f if x.startswith("VmRSS:")).split()[1])
        except (OSError, StopIteration):
            continue
    return total / 1024


class Make:
    """``make <target>`` in the repository, in a session of its own."""

    def __init__(self, target: str, *, env: dict[str, str], log_dir: Path,
                 args: tuple[str, ...] = ()) -> None:
        self.target = target
        self.log_path = log_dir / f"make-{target}.log"
        with open(self.log_path, "w") as log:
            self.proc = subprocess.Popen(["make", "--no-print-directory", target, *args],
                                         cwd=ROOT, env=env, stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True)

    def log(self) -> str:
        return self.log_path.read_text()

    def processes(self, name: str) -> list[int]:
        """The processes below make whose command line contains ``name``."""
        return [pid for pid in descendants(self.proc.pid) if name in command_line(pid)]

    def check(self) -> None:
        if self.proc.poll() is not None:
            raise SystemExit(f"make {self.target} exited ({self.proc.returncode}):\n"
                             f"{self.log()[-3000:]}")

    def stop(self, timeout: float = 60) -> None:
        """SIGINT to make's group, as Ctrl-C in its terminal (the worker group asks each worker
        for its warm shutdown); SIGKILL to whatever of it is left after ``timeout`` s."""
        if self.proc.poll() is not None:
            return
        below = descendants(self.proc.pid)
        os.killpg(self.proc.pid, signal.SIGINT)
        deadline = time.monotonic() + timeout
        while any(alive(pid) for pid in [self.proc.pid, *below]):
            if time.monotonic() > deadline:
                for pid in [self.proc.pid, *below]:
                    if alive(pid):
                        os.kill(pid, signal.SIGKILL)
                break
            time.sleep(0.2)
        self.proc.wait()


class Hango:
    """``make serve`` on ``port`` and ``make worker``, on the database and broker given."""

    def __init__(self, *, env: dict[str, str], port: int, log_dir: Path) -> None:
        self.env = {**env, "HANGO_MCP_ALLOW_PRIVATE": "1"}
        self.port, self.log_dir = port, log_dir
        self.url = f"http://127.0.0.1:{port}"
        self.serve: Make | None = None
        self.worker: Make | None = None

    def start(self, *, processes: int) -> None:
        self.serve = Make("serve", env={**self.env, "PGAPPNAME": WEB_APP}, log_dir=self.log_dir,
                          args=(f"PORT={self.port}",))
        self._wait(self._answers, self.serve, what="make serve's /healthz")
        self.worker = Make("worker", env={**self.env, "PGAPPNAME": WORKER_APP},
                           log_dir=self.log_dir)
        self._wait(lambda: self.worker is not None
                   and self.worker.log().count(" ready.") >= processes, self.worker,
                   what=f"{processes} worker processes ready")

    def _answers(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/healthz", timeout=2) as response:
                return bool(response.status == 200)
        except OSError:
            return False

    @staticmethod
    def _wait(ready, make: Make, *, what: str, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            make.check()
            if time.monotonic() > deadline:
                raise SystemExit(f"timed out waiting for {what}:\n{make.log()[-3000:]}")
            time.sleep(0.2)

    def workers(self) -> list[int]:
        """The Celery worker processes of ``make worker`` (the group's front left out)."""
        return self.worker.processes("celery") if self.worker else []

    def worker_group(self) -> list[int]:
        """Every process of ``make worker`` below make: the group's front and its workers."""
        return descendants(self.worker.proc.pid) if self.worker else []

    def web(self) -> list[int]:
        """gunicorn's master and its workers."""
        return self.serve.processes("gunicorn") if self.serve else []

    def check(self) -> None:
        for make in (self.serve, self.worker):
            if make is not None:
                make.check()

    def stop(self) -> None:
        for make in (self.worker, self.serve):
            if make is not None:
                make.stop()


class Api:
    """The tenant owner's HTTP client: one keep-alive connection per thread."""

    def __init__(self, base: str, key: str) -> None:
        self.base, self.key = base, key
        self._local = threading.local()

    @property
    def http(self) -> Any:
        import httpx

        if not hasattr(self._local, "client"):
            self._local.client = httpx.Client(
                base_url=self.base, timeout=120,
                headers={"Authorization": f"Bearer {self.key}"})
        return self._local.client

    def send(self, method: str, path: str, body: Any = None, *,
             expect: tuple[int, ...] = (200, 201, 202)) -> Any:
        response = self.http.request(method, path, json=body)
        if response.status_code not in expect:
            raise SystemExit(f"{method} {path}: {response.status_code} {response.text[:500]}")
        return response.json() if response.content else None
