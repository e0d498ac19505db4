"""What a benchmark's worker notes of each run on its way to its first model call, and what it
sends to PostgreSQL: imported by :mod:`bench.concurrency_app` into every worker process.

**Stages** (``BENCH_STAGES_FILE``): for each run, ``time.time()`` as its task reaches the worker
process (Celery's ``task_received``), as the task starts on its greenlet (``task_prerun``), as
it passes its process's start gate (:func:`runs.execution.concurrency.starting`), as its claim
returns (:func:`runs.execution.worker.claim_run`), as its loop is built
(:func:`runs.execution.worker.build_execution`) and as its first model call goes out
(:func:`first_call`, from :mod:`bench.concurrency_app`'s provider). Kept in memory; at the
worker's shutdown they go onto the end of the file as ``"<run id> <stage> <time>"`` lines.

**Statements** (``BENCH_STATEMENTS_FILE``): every statement sent through Django's cursors and
every commit, counted with the client-side time it took, by the phase of the run the greenlet
was in (``start``: gate and claim; ``build``; ``loop``: the turns; ``after``: the end's
hand-over) or ``background`` (the renewer, the reconciler, the cancel poll), and by its text
(literals and parameters aside). Written as JSON lines at shutdown, with the runs each process
started, so that a benchmark divides by them.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from celery.signals import task_postrun, task_prerun, task_received, worker_shutdown
from greenlet import getcurrent

STAGES = ("received", "prerun", "gate", "claimed", "built", "first_call")

_stamps: list[tuple[str, str, float]] = []
_runs: dict[int, str] = {}  # greenlet -> the run its task advances
_phases: dict[int, str] = {}  # greenlet -> the phase of that run
_statements: dict[tuple[str, str], list[float]] = {}  # (phase, text) -> [count, seconds]
_started = 0


def _stamp(run_id: str | None, stage: str) -> None:
    if run_id is not None:
        _stamps.append((run_id, stage, time.time()))


def _current() -> str | None:
    return _runs.get(id(getcurrent()))


def _phase(name: str) -> None:
    key = id(getcurrent())
    if key in _runs:
        _phases[key] = name


def first_call() -> None:
    """The run of this greenlet made its first model call (the caller decides it is the first)."""
    _stamp(_current(), "first_call")


@task_received.connect
def _received(request: Any, **_: Any) -> None:
    if request.name == "runs.execute_run":
        _stamp(str(request.args[0]), "received")


@task_prerun.connect
def _prerun(task: Any, args: Any, **_: Any) -> None:
    global _started
    if task.name == "runs.execute_run":
        key = id(getcurrent())
        _runs[key], _phases[key] = str(args[0]), "start"
        _started += 1
        _stamp(_runs[key], "prerun")


@task_postrun.connect
def _postrun(**_: Any) -> None:
    key = id(getcurrent())
    _runs.pop(key, None)
    _phases.pop(key, None)


def _wrap_worker() -> None:
    """The start gate, the claim and the build of :mod:`runs.execution.worker`, stamped."""
    from runs.execution import concurrency, worker

    starting, claim_run, build = concurrency.starting, worker.claim_run, worker.build_execution
    execute_run = worker.execute_run

    @contextmanager
    def gated(*args: Any, **kwargs: Any) -> Iterator[None]:
        with starting(*args, **kwargs):
            _stamp(_current(), "gate")
            yield

    def claimed(*args: Any, **kwargs: Any) -> Any:
        run = claim_run(*args, **kwargs)
        _stamp(_current(), "claimed")
        _phase("build")
        return run

    def built(*args: Any, **kwargs: Any) -> Any:
        made = build(*args, **kwargs)
        _stamp(_current(), "built")
        _phase("loop")
        return made

    def executed(*args: Any, **kwargs: Any) -> Any:
        try:
            return execute_run(*args, **kwargs)
        finally:
            _phase("after")

    concurrency.starting, worker.claim_run = gated, claimed
    worker.build_execution, worker.execute_run = built, executed


_LITERALS = re.compile(r"'(?:[^']|'')*'|\b\d+(?:\.\d+)?\b|%s|\$\d+")
_SPACE = re.compile(r"\s+")


def _text(sql: str) -> str:
    return _SPACE.sub(" ", _LITERALS.sub("?", sql)).strip()[:160]


def _count(text: str, seconds: float) -> None:
    phase = _phases.get(id(getcurrent()), "background")
    entry = _statements.setdefault((phase, text), [0, 0.0])
    entry[0] += 1
    entry[1] += seconds


def _wrap_database() -> None:
    """Every statement of Django's cursors, and every commit, counted."""
    from django.db.backends.base.base import BaseDatabaseWrapper
    from django.db.backends.utils import CursorWrapper

    execute, executemany = CursorWrapper._execute, CursorWrapper._executemany
    commit = BaseDatabaseWrapper._commit

    def counted(run: Any) -> Any:
        def wrapper(self: Any, sql: str, *args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return run(self, sql, *args, **kwargs)
            finally:
                _count(_text(sql), time.perf_counter() - started)
        return wrapper

    def committed(self: Any) -> Any:
        started = time.perf_counter()
        try:
            return commit(self)
        finally:
            if self.connection is not None:
                _count("COMMIT", time.perf_counter() - started)

    CursorWrapper._execute, CursorWrapper._executemany = counted(execute), counted(executemany)
    BaseDatabaseWrapper._commit = committed  # type: ignore[method-assign]


@worker_shutdown.connect
def _write(**_: Any) -> None:
    if path := os.environ.get("BENCH_STAGES_FILE"):
        with open(path, "a") as f:  # every process of the worker group adds its own, at once
            f.write("".join(f"{run} {stage} {at}\n" for run, stage, at in _stamps))
    if path := os.environ.get("BENCH_STATEMENTS_FILE"):
        lines = [json.dumps({"pid": os.getpid(), "started": _started})]
        lines += [json.dumps({"phase": phase, "sql": text, "n": n, "s": s})
                  for (phase, text), (n, s) in _statements.items()]
        with open(path, "a") as f:
            f.write("".join(f"{line}\n" for line in lines))


def install() -> None:
    """The stamps and counts, in this worker process (Django is set up: the app is loaded)."""
    _wrap_worker()
    if os.environ.get("BENCH_STATEMENTS_FILE"):
        _wrap_database()
