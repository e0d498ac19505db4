"""hango's Celery app with the worker benchmark's stamps, imported into ``make worker``'s group
(``python -m hango_project.worker_group -I bench.worker_app``).

The app object is ``hango_project.celery.app`` itself, so the worker runs hango's tasks with
hango's settings. Added: an entry in the provider registry for each ``scripted:workload-<T>``
the benchmark names (``BENCH_WORKLOAD_TURNS``, comma separated) that wraps the real scripted
model and stamps ``time.perf_counter()`` (the system's monotonic clock, the same in every
process) on entry to and exit from each model call; stamps when the task starts
(``task_prerun``), when the claim and ``build_execution`` return, and when the task ends. A
gevent worker runs many tasks at once, each on its greenlet: a task's stamps are kept
greenlet-local (``threading.local``, which gevent's patching makes so). At ``task_postrun`` —
after the last stamp — each task's stamps go as one JSON record onto the Redis list
``BENCH_STAMPS_KEY`` of the broker, for :mod:`bench.bench_workers`.
"""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Any

import redis
from celery.signals import task_postrun, task_prerun

from bench.workloads import wrap_workloads
from hango_project.celery import app

STAMPS_KEY = os.environ.get("BENCH_STAMPS_KEY", "bench:stamps")
_local = threading.local()  # a greenlet's own under gevent: the stamps of the task it runs


def _stamps() -> dict[str, Any]:
    """The stamps of the task this thread (a gevent worker's greenlet) is running."""
    if not hasattr(_local, "stamps"):
        _local.stamps = {}
    stamps: dict[str, Any] = _local.stamps
    return stamps


class Timed:
    """The real provider, with every call's entry and exit stamped into the current task's."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.name = inner, inner.name

    def complete(self, request: Any) -> Any:
        _stamps().setdefault("enter", []).append(time.perf_counter())
        response = self.inner.complete(request)
        _stamps().setdefault("exit", []).append(time.perf_counter())
        return response




def _stamped(name: str, function: Any) -> Any:
    def call(*args: Any, **kwargs: Any) -> Any:
        _stamps()[f"{name}_from"] = time.perf_counter()
        result = function(*args, **kwargs)
        _stamps()[name] = time.perf_counter()
        return result
    return call


_instrumented = False


def _instrument_worker() -> None:
    """Stamp the two phases before the first model call, where execute_run calls them (once
    per process, at its first task: Django is set up by then)."""
    global _instrumented
    from runs.execution import worker

    worker.claim_run = _stamped("claimed", worker.claim_run)
    worker.build_execution = _stamped("built", worker.build_execution)
    _instrumented = True


@task_prerun.connect
def _started(task_id: str, task: Any, args: tuple = (), **_: Any) -> None:
    if not _instrumented:
        _instrument_worker()
    _local.stamps = {"start": time.perf_counter(), "task": task.name, "args": list(args),
                     "pid": os.getpid()}


@task_postrun.connect
def _finished(task_id: str, task: Any, retval: Any = None, **_: Any) -> None:
    _stamps().update(end=time.perf_counter(), result=retval if isinstance(retval, str) else None)
    if task.name == "runs.execute_run":
        _redis().rpush(STAMPS_KEY, json.dumps(_stamps()))


_client: redis.Redis | None = None


def _redis() -> redis.Redis:
    global _client
    if _client is None:  # one per process
        _client = redis.Redis.from_url(app.conf.broker_url)
    return _client


wrap_workloads(Timed)

__all__ = ["app"]
