"""The one Redis database this suite is given, a private Redis a test may stop and start, and
pointing this process's Celery app at either.

Other suites may share the Redis server, each with a database of its own, so a test reads,
writes and flushes this database and no other. A test that needs a broker that goes down and
comes back starts its own ``redis-server`` (:class:`RedisServer`) instead.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import redis
from celery import Celery
from kombu.transport.redis import PRIORITY_STEPS, Channel

from tests.support.servers import free_port


def broker_url() -> str:
    """``HANGO_TEST_BROKER_URL``, else the Makefile's default (database 15); under
    pytest-xdist (``make test`` runs two test processes), each process's own database, counted
    down from that one: ``gw0`` has it, ``gw1`` the one below (15, then 14), so that one
    process's ``flushdb`` never empties the queue a worker of the other is reading."""
    url = os.environ.get("HANGO_TEST_BROKER_URL") or "redis://127.0.0.1:6379/15"
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    return _database_below(url, int(worker.removeprefix("gw")))


def _database_below(url: str, by: int) -> str:
    if not by:
        return url
    parts = urlsplit(url)
    database = int(parts.path.strip("/") or 0) - by
    assert database >= 0, f"{url}: no Redis database {by} below it for xdist worker gw{by}"
    return urlunsplit(parts._replace(path=f"/{database}"))


def queued_tasks(url: str, queue: str = "runs") -> int:
    """Task messages waiting in ``queue``, at every priority: kombu keeps one Redis list per
    priority step (the queue's own name for priority 0)."""
    client = redis.Redis.from_url(url)
    keys = [queue] + [f"{queue}{Channel.sep}{step}" for step in PRIORITY_STEPS if step]
    return sum(client.llen(key) for key in keys)


class RedisServer:
    """A ``redis-server`` of the test's own on a free port, with a password; down until
    :meth:`start`, and it may be stopped and started again on the same port."""

    def __init__(self, data_dir: Path, *, password: str = "broker-secret") -> None:
        self.port = free_port()
        self.password = password
        self.data_dir = data_dir
        self.url = f"redis://:{password}@127.0.0.1:{self.port}/0"
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        assert self._proc is None, "already running"
        self._proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
             "--requirepass", self.password, "--save", "", "--appendonly", "no",
             "--dir", str(self.data_dir)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        client = redis.Redis.from_url(self.url)
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                return
            except redis.ConnectionError:
                if time.monotonic() > deadline or self._proc.poll() is not None:
                    raise
                time.sleep(0.05)

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait()
            self._proc = None


@contextmanager
def celery_broker(app: Celery, url: str) -> Iterator[None]:
    """This process's Celery app publishes to ``url`` inside the block, and reads task results
    there (the trigger's answers); as before after it."""
    previous = {"broker_url": app.conf.broker_url, "result_backend": app.conf.result_backend,
                "task_always_eager": app.conf.task_always_eager}
    _forget_connections(app)
    app.conf.update(broker_url=url, result_backend=url, task_always_eager=False)
    try:
        yield
    finally:
        _forget_connections(app)
        app.conf.update(**previous)


def _forget_connections(app: Celery) -> None:
    # The app keeps its connection and producer pools once made, for the URL they were made
    # with; dropping them (as Celery itself does after a fork) makes the next publish use the
    # URL configured now.
    app._pool = None
    app.amqp._producer_pool = None
    app._backend_cache = None  # the result backend, made anew for the URL configured now
    app._local.__dict__.pop("backend", None)
