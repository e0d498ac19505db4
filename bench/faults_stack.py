"""The processes the fault suite starts, stops, kills and stalls.

A private PostgreSQL (``initdb`` + ``pg_ctl`` in a temporary directory, on a free port) and a
private ``redis-server``, so restarting them disturbs nobody else on the machine; the web app
under gunicorn (as ``make serve`` runs it: gevent workers); Celery workers as ``make worker``
runs them (the gevent pool, each worker's runs greenlets of its one process; the reconciler a
thread of it, no beat), or with the prefork pool, on hango's app with the suite's model
(``bench/fault_app.py``). Every process runs in a process group of its own, so a worker's pool
children, if it has any, are stalled and killed with it. :class:`Worker` also
serves the fast scenario test, which brings its own database and Redis.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

from tests.support.servers import free_port

ROOT = Path(__file__).resolve().parent.parent
PG_BIN = Path("/usr/lib/postgresql/15/bin")




def children(pid: int) -> list[int]:
    """The live child processes of ``pid`` (from /proc)."""
    found: list[int] = []
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            found += [int(c) for c in (task / "children").read_text().split()]
    except (FileNotFoundError, ProcessLookupError):
        return []
    return [c for c in found if alive(c)]


def alive(pid: int) -> bool:
    """Whether ``pid`` is a process that has not exited (a zombie counts as exited)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def talks_through_pipes(pid: int) -> bool:
    """Whether ``pid`` holds a pipe: a prefork pool child does (its main process sends it tasks
    that way), the embedded beat does not."""
    try:
        return any(os.readlink(fd).startswith("pipe:") for fd in
                   (str(p) for p in Path(f"/proc/{pid}/fd").iterdir()))
    except (FileNotFoundError, PermissionError):
        return False


def wait_until(predicate: Callable[[], bool], *, timeout: float, what: str,
               every: float = 0.05) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(every)


class Process:
    """A command in a process group of its own, its output in a log file."""

    def __init__(self, name: str, cmd: list[str], *, env: dict[str, str], log_dir: Path) -> None:
        self.name = name
        self.log_path = log_dir / f"{name}.log"
        self._log: IO[str] = open(self.log_path, "w")  # noqa: SIM115 (closed in stop())
        self.proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=self._log,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        self.pid = self.proc.pid

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def running(self) -> bool:
        return self.proc.poll() is None

    def signal_group(self, sig: signal.Signals) -> None:
        try:
            os.killpg(self.pid, sig)
        except ProcessLookupError:
            pass

    def stop(self, timeout: float = 20) -> None:
        """SIGTERM the group (resumed first, in case it was stalled), then SIGKILL what is left:
        also the processes its leader left behind when it was killed."""
        self.signal_group(signal.SIGCONT)
        self.signal_group(signal.SIGTERM)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pass
        self.signal_group(signal.SIGKILL)
        self.proc.wait()
        self._log.close()


class Worker(Process):
    """``celery worker`` as ``make worker`` runs it (``pool="gevent"``: ``concurrency`` runs at
    once in its one process), or with the prefork pool (``concurrency`` child processes);
    ``beat=True`` adds the embedded beat workers ran before the reconciler moved into them (it
    has nothing left to schedule: only to compare what a ``kill -9`` leaves)."""

    def __init__(self, name: str, *, env: dict[str, str], log_dir: Path, concurrency: int = 2,
                 pool: str = "gevent", beat: bool = False) -> None:
        self.schedule = log_dir / f"{name}-beat-schedule"
        cmd = [sys.executable, "-m", "celery", "-A", "bench.fault_app", "worker",
               "--pool", pool, "--loglevel", "INFO", "--concurrency", str(concurrency),
               "--hostname", f"{name}@%h", "--without-mingle", "--without-gossip"]
        if beat:
            cmd += ["--beat", "--schedule", str(self.schedule)]
        super().__init__(name, cmd, env={**env, "PYTHONUNBUFFERED": "1"}, log_dir=log_dir)
        self.concurrency, self.pool, self.beat = concurrency, pool, beat
        self.beat_pid: int | None = None
        self.killed: set[int] = set()

    def wait_ready(self, timeout: float = 90) -> Worker:
        def ready() -> bool:
            if not self.running():
                raise RuntimeError(f"worker {self.name} exited:\n{self.log()[-3000:]}")
            return " ready." in self.log()

        wait_until(ready, timeout=timeout, what=f"worker {self.name} ready", every=0.1)
        # The embedded beat is the child that holds no pipe (its title says nothing without
        # setproctitle, and its schedule file is not held open).
        runners = 1 if self.pool == "gevent" else self.concurrency
        expected = runners + (1 if self.beat else 0)
        wait_until(lambda: len(self.processes()) >= expected, timeout=30,
                   what=f"the processes of {self.name}")
        if self.beat:
            self.beat_pid = next((p for p in self.processes() if not talks_through_pipes(p)),
                                 None)
        return self

    def processes(self) -> list[int]:
        """The live processes that run its runs — its main one under gevent, the pool's
        children under prefork — and an embedded beat."""
        kids = children(self.pid)
        return [self.pid, *kids] if self.pool == "gevent" and alive(self.pid) else kids

    def kill(self, pid: int) -> None:
        """SIGKILL one process of this worker (the main process, or a pool child)."""
        os.kill(pid, signal.SIGKILL)
        self.killed.add(pid)

    def stall(self) -> None:
        """SIGSTOP the main process (its reconciler thread with it) and its pool."""
        self.signal_group(signal.SIGSTOP)

    def resume(self) -> None:
        self.signal_group(signal.SIGCONT)


def _pg_command(cmd: list[str]) -> list[str]:
    # PostgreSQL refuses to run as root: its commands run as the postgres user then.
    return ["runuser", "-u", "postgres", "--", *cmd] if os.geteuid() == 0 else cmd


class Postgres:
    """A private cluster in ``root``, listening on 127.0.0.1 on a free port."""

    def __init__(self, root: Path) -> None:
        self.data = root / "pg"
        self.log_path = root / "postgres.log"
        self.port = free_port()
        self.data.mkdir()
        if os.geteuid() == 0:
            shutil.chown(root, "postgres")
            shutil.chown(self.data, "postgres")
        subprocess.run(_pg_command([str(PG_BIN / "initdb"), "-D", str(self.data), "-U",
                                    "postgres", "-A", "trust", "-E", "UTF8", "--no-sync"]),
                       check=True, capture_output=True)
        self.start()
        subprocess.run(_pg_command([str(PG_BIN / "createdb"), "-h", "127.0.0.1", "-p",
                                    str(self.port), "-U", "postgres", "hango"]), check=True)

    @property
    def url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/hango"

    def _ctl(self, *args: str) -> None:
        subprocess.run(_pg_command([str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-w",
                                    "-t", "60", *args]), check=True, capture_output=True)

    def start(self) -> None:
        # fsync off: the suite measures hango's recovery, not the disk's (a fast shutdown still
        # writes everything out).
        options = (f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.data} "
                   "-c fsync=off -c max_connections=200")
        self._ctl("-l", str(self.log_path), "-o", options, "start")

    def stop(self, mode: str = "fast") -> None:
        self._ctl("-m", mode, "stop")


class Redis:
    """A private ``redis-server`` that keeps nothing on disk: a restart loses every queued task
    (the reconciler must find those runs again)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.port = free_port()
        self.starts = 0
        self.process = self._start()

    def _start(self) -> Process:
        self.starts += 1
        cmd = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
               "--appendonly", "no", "--dir", str(self.root)]
        process = Process(f"redis-{self.starts}", cmd, env=dict(os.environ), log_dir=self.root)
        wait_until(self._ping, timeout=20, what="redis")
        return process

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def _ping(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                s.sendall(b"PING\r\n")
                return s.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def stop(self) -> None:
        self.process.stop()

    def restart(self, down_seconds: float) -> None:
        self.stop()
        time.sleep(down_seconds)
        self.process = self._start()


class Web(Process):
    """The API under gunicorn, as ``make serve`` runs it (gevent workers)."""

    def __init__(self, *, env: dict[str, str], log_dir: Path, workers: int = 2) -> None:
        self.port = free_port()
        cmd = [sys.executable, "-m", "gunicorn", "hango_project.wsgi", "--bind",
               f"127.0.0.1:{self.port}", "--workers", str(workers), "--timeout", "60",
               "--worker-class", "gevent", "--worker-connections", "2000"]
        super().__init__("web", cmd, env=env, log_dir=log_dir)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"
