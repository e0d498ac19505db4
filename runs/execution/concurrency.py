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
failures; the runs waiting are admitted in the order they came (:class:`Gate`).
``docs/operations/scaling.md`` (*Runs in flight*) says what was measured.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from hango_project.config import hango
from hango_project.pgpool import first_in_line

_gate: Gate | None = None
_gate_lock = threading.Lock()


def starts_at_once() -> int:
    """The runs a process starts at once: half its database pool, at least one."""
    return max(1, hango().database_pool_size // 2)


class Gate:
    """``slots`` start slots handed out first come, first served. A slot given back goes
    straight to the run that has waited longest: a semaphore lets a newcomer take a slot freed
    a moment before its waiters wake (gevent's does, and a waiter that timed out to keep its
    reservation fresh went to the back of the line), and under a wave of posts the runs that
    came first waited longest — the first model call's p99 was the gate's (bench/README.md,
    *A post over HTTP*)."""

    def __init__(self, slots: int) -> None:
        self._lock = threading.Lock()
        self._free = slots
        self._waiting: deque[threading.Event] = deque()

    def enter(self, waiting: Callable[[], None] | None, every: float) -> None:
        """Take a slot, waiting in line as long as it takes; ``waiting()`` every ``every``
        seconds while it waits."""
        with self._lock:
            if self._free and not self._waiting:
                self._free -= 1
                return
            turn = threading.Event()
            self._waiting.append(turn)
        try:
            if waiting is not None:
                waiting()
            while not turn.wait(every):
                if waiting is not None:
                    waiting()
        except BaseException:  # killed while in line: leave it, or pass on a slot handed over
            with self._lock:
                handed = turn.is_set()
                if not handed:
                    self._waiting.remove(turn)
            if handed:
                self.leave()
            raise

    def leave(self) -> None:
        """Give a slot back: to the longest waiter, if any."""
        with self._lock:
            if self._waiting:
                self._waiting.popleft().set()
            else:
                self._free += 1

    def waiters(self) -> int:
        with self._lock:
            return len(self._waiting)


def _the_gate() -> Gate:
    global _gate
    with _gate_lock:
        if _gate is None:
            _gate = Gate(starts_at_once())
        return _gate


@contextmanager
def starting(waiting: Callable[[], None] | None = None, *, every: float) -> Iterator[None]:
    """Hold one of the process's start slots for the block (a run's claim and build),
    waiting in line as long as it takes for one to free; ``waiting()`` is called every
    ``every`` seconds while it waits (the worker's reservation beat: the task keeps its
    reservation recent, so that the reconciler knows a live worker holds the run:
    :mod:`runs.execution.queued_tasks`). Within the block the run takes its database
    connection ahead of the runs in flight (:func:`~hango_project.pgpool.first_in_line`): a
    slot held while its holder waits behind a thousand turns' commits admits nobody, and the
    slots are few, so the turns keep the rest of the pool."""
    gate = _the_gate()
    gate.enter(waiting, every)
    was = first_in_line()
    try:
        yield
    finally:
        first_in_line(was)
        gate.leave()


def reset() -> None:
    """Forget the gate (a test that changed the pool's size)."""
    global _gate
    with _gate_lock:
        _gate = None
