"""Real Celery worker processes for integration tests, on Redis and the test database."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg2
from django.db import connection

from tests.support.servers import stop_group

ROOT = Path(__file__).resolve().parents[2]


def test_database_url() -> str:
    db = connection.settings_dict
    user = db.get("USER") or "postgres"
    host = db.get("HOST") or "127.0.0.1"
    port = db.get("PORT") or 5432
    return f"postgres://{user}@{host}:{port}/{db['NAME']}"


def create_database(name: str) -> str:
    """A database ``name`` on the test database's server, created anew and empty (never
    migrated): its URL. :func:`drop_database` drops it."""
    with _server() as cursor:
        cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        cursor.execute(f'CREATE DATABASE "{name}"')
    return test_database_url().rsplit("/", 1)[0] + f"/{name}"


def drop_database(name: str) -> None:
    with _server() as cursor:
        cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def _server() -> Iterator[Any]:
    """A cursor on the test database's server, outside any transaction (CREATE DATABASE)."""
    db = connection.settings_dict
    raw = psycopg2.connect(dbname="postgres", user=db.get("USER") or "postgres",
                           host=db.get("HOST") or "127.0.0.1", port=db.get("PORT") or 5432)
    raw.autocommit = True
    try:
        with raw.cursor() as cursor:
            yield cursor
    finally:
        raw.close()


def worker_environment(broker_url: str, env: dict[str, str]) -> dict[str, str]:
    """A worker process's environment: this one's, on the test database and ``broker_url``."""
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "hango_project.settings",
        "DATABASE_URL": test_database_url(),
        "CELERY_BROKER_URL": broker_url,
        "HANGO_RUN_INLINE": "0",
        "PYTHONUNBUFFERED": "1",
        **env,
    }


class WorkerProcess:
    """``celery worker`` as its own process group, logging to a file the test can read: by
    default as ``make worker`` runs it (the gevent pool, ``HANGO_WORKER_CONCURRENCY`` runs at
    once); another pool takes one task at a time. ``args``: more of ``celery worker``'s options."""

    def __init__(self, name: str, broker_url: str, log_dir: Path, *, env: dict[str, str],
                 pool: str = "gevent", ready: bool = True, args: tuple[str, ...] = ()) -> None:
        self.name = name
        self.log_path = log_dir / f"{name}.log"
        cmd = [sys.executable, "-m", "celery", "-A", "hango_project", "worker",
               "--pool", pool, "--loglevel", "INFO",
               "--hostname", f"{name}@%h", "--without-mingle", "--without-gossip"]
        if pool != "gevent":
            cmd += ["--concurrency", "1"]
        cmd += args
        full_env = worker_environment(broker_url, env)
        self._log = open(self.log_path, "w")  # noqa: SIM115 (closed in stop())
        self.proc = subprocess.Popen(cmd, cwd=ROOT, env=full_env, stdout=self._log,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        if not ready:  # the test waits for what it expects
            return
        try:
            self.wait_for(lambda log: " ready." in log, what="worker ready")
        except BaseException:  # never left running by a test that could not use it
            self.stop()
            raise

    def log(self) -> str:
        return self.log_path.read_text()

    def wait_for(self, predicate: Callable[[str], bool], *, what: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate(self.log()):
                return
            if self.proc.poll() is not None:
                raise AssertionError(f"{self.name} exited:\n{self.log()}")
            time.sleep(0.1)
        raise AssertionError(f"timed out waiting for {what}:\n{self.log()}")

    def task_results(self) -> list[str]:
        """What each finished ``runs.execute_run`` returned, in order."""
        return re.findall(r"runs\.execute_run\[[^\]]+\] succeeded in [\d.]+s: '(\w+)'", self.log())

    def processes(self) -> list[int]:
        """The live processes of the worker's process group: its main process, pool children
        and whatever else it started (a zombie is dead, and not counted)."""
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                # pid (comm) state ppid pgrp …; comm may hold spaces, so split after it.
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:  # gone meanwhile
                continue
            if int(fields[2]) == self.proc.pid and fields[0] != "Z":
                found.append(int(entry.name))
        return found

    def kill_main(self) -> None:
        """SIGKILL the worker's main process alone, as the OOM killer or ``kill -9 PID`` does."""
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def kill(self) -> None:
        """SIGKILL the whole worker: no cleanup, no ack, as if the machine died."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self._log.close()

    def discard(self) -> None:
        """The test is over: SIGKILL the worker's whole process group at once. A warm
        shutdown (:meth:`stop`) of even an idle worker takes seconds (Celery's loop sees the
        signal at the end of its two-second wait, then joins its broadcast thread, then the
        interpreter winds down), after every test that started one, and nothing of it is under
        test there: a test of shutdown calls :meth:`stop` itself. The rows a killed worker
        held are the test's, emptied after it, and the broker's database is emptied before the
        next test that uses it."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # its pool's children and what they began
        except ProcessLookupError:  # nothing of the group is left
            pass
        self.proc.wait()
        self._log.close()

    def stop(self) -> None:
        for pid in self.processes() if self.proc.poll() is not None else []:
            os.kill(pid, signal.SIGKILL)  # what a killed main process left behind
        stop_group(self.proc)
        self._log.close()
