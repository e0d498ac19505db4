"""hango under a real HTTP server process (gunicorn, as `make serve` and docker-compose run it),
on the test database, and raw HTTP/1.1 requests to it (a chunked body, byte for byte)."""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    """A port that was free a moment ago: nothing listens there."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def stop_group(proc: subprocess.Popen, *, timeout: float = 20) -> None:
    """SIGTERM a process started in a session of its own, and its group; SIGKILL what is still
    there after ``timeout`` seconds."""
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


class GunicornProcess:
    """``gunicorn hango_project.wsgi`` as its own process group on a free port, on the database
    at ``database_url``, logging to a file; ``env`` adds to (or overrides) the environment, e.g.
    ``HANGO_MAX_BODY_BYTES``; ``threads`` above 1 serves that many requests at once (gthread),
    e.g. several event streams; ``worker_class="gevent"`` serves them as ``make serve`` does,
    as greenlets."""

    def __init__(self, log_dir: Path, *, database_url: str,
                 env: dict[str, str] | None = None, threads: int = 1,
                 worker_class: str | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_dir / f"gunicorn-{self.port}.log"
        full_env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "hango_project.settings",
            "DATABASE_URL": database_url,
            "CELERY_BROKER_URL": "",
            "HANGO_BROKER_URL": "",
            "PYTHONUNBUFFERED": "1",
            **(env or {}),
        }
        self._log = open(self.log_path, "w")  # noqa: SIM115 (closed in stop())
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "hango_project.wsgi", "--bind",
             f"127.0.0.1:{self.port}", "--workers", "1", "--threads", str(threads),
             "--timeout", "60",
             *(["--worker-class", worker_class] if worker_class else []),
             "--no-control-socket"],  # the default socket is one per user, shared
            cwd=ROOT, env=full_env, stdout=self._log, stderr=subprocess.STDOUT,
            start_new_session=True)
        try:
            self._wait_ready()
        except BaseException:  # never left running by a test that could not use it
            self.stop()
            raise

    def log(self) -> str:
        return self.log_path.read_text()

    def _wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"gunicorn exited:\n{self.log()}")
            try:
                with urllib.request.urlopen(f"{self.url}/healthz", timeout=2) as response:
                    if response.status == 200:
                        return
            except OSError:
                time.sleep(0.1)
        raise AssertionError(f"gunicorn did not come up:\n{self.log()}")

    def stop(self) -> None:
        stop_group(self.proc)
        self._log.close()


def chunked(body: bytes, size: int) -> bytes:
    """``body`` in HTTP/1.1 chunked transfer coding, ``size`` bytes a chunk."""
    out = b"".join(b"%x\r\n%s\r\n" % (len(body[i:i + size]), body[i:i + size])
                   for i in range(0, len(body), size))
    return out + b"0\r\n\r\n"


def raw_request(port: int, head: str, body: bytes = b"", timeout: float = 10) -> tuple[int, dict]:
    """Send ``head`` (request line and headers, without the blank line) and ``body`` exactly as
    given, on a connection of its own; the answer's status and JSON body."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as conn:
        conn.sendall(head.replace("\n", "\r\n").encode() + b"\r\n\r\n" + body)
        response = http.client.HTTPResponse(conn)
        response.begin()
        return response.status, json.loads(response.read() or b"{}")
