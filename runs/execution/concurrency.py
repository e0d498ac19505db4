"""How many runs a worker process starts at once: at most half its database connections'
worth, the others waiting their turn (:func:`starting`).

A gevent worker reserves up to ``HANGO_WORKER_CONCURRENCY`` tasks (1,000) and starts each as it
arrives. Starting a run — its claim and the reads that build its loop — takes a connection for
several statements, where a run in flight takes one for a turn's commit. A burst of a thousand
starts (a worker coming up on a backlog, a wave of posts) filled the queue for the pool's ten
connections, the runs in flight waited behind it, and under a starved CPU their waits passed
the pool's timeout: tasks retried, runs "lost their database". Here a run waits to start, with
no time limit (its task is reserved and its row untouched until it claims), until fewer than
half the pool's connections are going to starts; the other half stays for the runs already in
flight. Admission then goes as fast as the pool serves, and no faster: backpressure, not
failures. ``docs/operations/scaling.md`` (*Runs in flight*) says what was measured.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from hango_project.config import hango

_gate: threading.BoundedSemaphore | None = None
_gate_lock = threading.Lock()


def starts_at_once() -> int:
    """The runs a process starts at once: half its database pool, at least one."""
    return max(1, hango().database_pool_size // 2)


def _semaphore() -> threading.BoundedSemaphore:
    global _gate
    with _gate_lock:
        if _gate is None:
            _gate = threading.BoundedSemaphore(starts_at_once())
        return _gate


@contextmanager
def starting(waiting: Callable[[], None] | None = None, *, every: float) -> Iterator[None]:
    """Hold one of the process's start slots for the block (a run's claim and build),
    waiting as long as it takes for one to free; ``waiting()`` is called every ``every`` seconds
    while it waits (the worker's reservation beat: the task keeps its reservation recent, so
    that the reconciler knows a live worker holds the run: :mod:`runs.execution.queued_tasks`)."""
    gate = _semaphore()
    if not gate.acquire(blocking=False):
        if waiting is not None:
            waiting()
        while not gate.acquire(timeout=every):
            if waiting is not None:
                waiting()
    try:
        yield
    finally:
        gate.release()


def reset() -> None:
    """Forget the gate (a test that changed the pool's size)."""
    global _gate
    with _gate_lock:
        _gate = None
