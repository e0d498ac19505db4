"""A bounded set of open PostgreSQL connections that a process's threads (a gevent worker's
greenlets) take in turn: at most ``size`` are open, a thread holds one only between taking and
giving it back, and a thread that finds all of them lent waits its turn.

A wait is backpressure, not a failure: a busy process (a thousand runs, a starved CPU) has a
queue of takers that may each wait longer than ``timeout`` while connections come and go. A
take fails only when no connection at all was given back for ``timeout`` seconds — every one
held by takers that stopped moving (a leak, a hung server), which waiting longer would not cure.

It knows nothing of Django (:mod:`hango_project.pgpool.base` lends its connections to Django's
connection objects). No query is sent to check a connection out: an idle connection has nothing
to read, so one whose socket is readable has been ended by its server (a restart, an
administrator, an idle timeout: the server says why, then closes) and is closed instead of
lent — one poll of the socket, no round trip. One that breaks while lent fails its statement,
is closed when given back, and is replaced on demand.

A taker may ask to be *first in line*: when all connections are lent, the next one given back
goes to it before any other waiting taker (a process's run watch, whose one statement answers
for every run the process holds, must not wait behind those runs).
"""

from __future__ import annotations

import select
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from psycopg2 import extensions

Connect = Callable[[], Any]  # opens a new DB-API connection


class PoolTimeout(Exception):
    """No connection was given back for ``timeout`` seconds while a taker waited."""


@dataclass(frozen=True)
class PoolStats:
    open: int  # connections open now, lent or idle
    lent: int
    peak: int  # the most open at once
    opened: int  # connections opened since the pool began
    waits: int  # takes that found every connection lent and waited (or wait now)


@dataclass
class _Idle:
    raw: Any
    opened_at: float


class ConnectionPool:
    """At most ``size`` connections; one given back while older than ``max_age`` seconds is
    closed (the next take opens a fresh one), as one that broke or was given back in a failed
    state. Idle connections are taken most recently used first: they have the statements
    prepared on them and the server's caches warm."""

    def __init__(self, *, size: int, timeout: float, max_age: float | None) -> None:
        if size < 1:
            raise ValueError("a connection pool holds at least one connection")
        self.size, self.timeout, self.max_age = size, timeout, max_age
        self._slots = threading.BoundedSemaphore(size)  # one per connection lent or opening
        self._lock = threading.Lock()
        self._first: deque[threading.Event] = deque()  # first-in-line takers waiting, in order
        self._idle: list[_Idle] = []
        self._opened_at: dict[int, float] = {}  # id(raw) → when, for every open connection
        self._lent = self._peak = self._opened = self._waits = 0
        self._given = 0  # slots freed since the pool began: a waiter's sign of progress
        # Set in a forked child on its parent's pool: what it lent is the parent's, and is
        # kept as it is when given back (closing it would end the parent's session).
        self.inherited = False
        self._kept: list[Any] = []

    def take_idle(self, *, first: bool = False) -> Any | None:
        """An idle connection, waiting for one to be given back while all are lent; None when
        the pool would have to open one (the caller then takes with :meth:`take`)."""
        raw, _ = self.take(None, first=first)
        return raw

    def take(self, connect: Connect | None, *, first: bool = False) -> tuple[Any, bool]:
        """A connection, and whether it is new (opened by ``connect`` for this take; with no
        ``connect``, none is opened: ``(None, False)``). ``first``: ahead of the takers
        waiting, if it has to wait."""
        if not self._slots.acquire(blocking=False):
            if not (self._wait_first() if first else self._wait()):
                raise PoolTimeout(
                    f"all {self.size} database connections of this process stayed in use for "
                    f"{self.timeout:g} s, none given back (HANGO_DATABASE_POOL_SIZE, "
                    "HANGO_DATABASE_POOL_TIMEOUT)")
        stale: list[_Idle] = []
        try:
            with self._lock:
                while self._idle:
                    idle = self._idle.pop()
                    if not self._too_old(idle.opened_at) and _alive(idle.raw):
                        self._lent += 1
                        return idle.raw, False
                    self._opened_at.pop(id(idle.raw), None)
                    stale.append(idle)
            if connect is None:
                self._release_slot()
                return None, False
            raw = connect()
        except BaseException:
            self._release_slot()
            raise
        finally:
            for entry in stale:
                _close(entry.raw)
        with self._lock:
            self._opened_at[id(raw)] = time.monotonic()
            self._lent += 1
            self._opened += 1
            self._peak = max(self._peak, len(self._opened_at))
        return raw, True

    def give(self, raw: Any, *, reuse: bool = True) -> None:
        """Take back a connection :meth:`take` lent; it is closed instead of kept when
        ``reuse`` is false, when it broke, or when it is too old."""
        if self.inherited:
            self._kept.append(raw)
            return
        try:
            with self._lock:
                opened_at = self._opened_at.get(id(raw), 0.0)
            if reuse and not self._too_old(opened_at) and _reset(raw):
                with self._lock:
                    self._idle.append(_Idle(raw, opened_at))
                    self._lent -= 1
                return
            with self._lock:
                self._opened_at.pop(id(raw), None)
                self._lent -= 1
            _close(raw)
        finally:
            self._release_slot()

    def _moving(self, given: int) -> bool:
        """Whether a connection was given back since ``given`` was read from ``_given``."""
        with self._lock:
            return self._given != given

    def _wait(self) -> bool:
        """Wait for a slot while the pool moves; False once ``timeout`` passes without any
        connection given back."""
        with self._lock:
            self._waits += 1
        while True:
            with self._lock:
                given = self._given
            if self._slots.acquire(timeout=self.timeout):
                return True
            if not self._moving(given):
                return False

    def _wait_first(self) -> bool:
        """Wait for a slot ahead of the semaphore's waiters: the next one given back is handed
        to the first of these; False after ``timeout``."""
        handed = threading.Event()
        with self._lock:  # counted once in line: a taker counted waiting is handed the next
            self._waits += 1
            self._first.append(handed)
        if self._slots.acquire(blocking=False):  # given back meanwhile, to the semaphore
            with self._lock:
                handed_too = handed not in self._first
                if not handed_too:
                    self._first.remove(handed)
            if handed_too:  # a giver handed one over as well: one is enough
                self._release_slot()
            return True
        while True:
            with self._lock:
                given = self._given
            if handed.wait(self.timeout):
                return True
            with self._lock:
                if handed not in self._first:
                    return True  # handed over just as the wait ended
                if self._given == given:
                    self._first.remove(handed)
                    return False

    def _release_slot(self) -> None:
        """A connection's slot is free: to the first first-in-line taker waiting, else to the
        semaphore (its waiters, or the next take)."""
        with self._lock:
            self._given += 1
            if self._first:
                self._first.popleft().set()
                return
        self._slots.release()

    def _too_old(self, opened_at: float) -> bool:
        return self.max_age is not None and time.monotonic() - opened_at >= self.max_age

    def close_idle(self) -> None:
        """Close every idle connection (a test database about to be dropped, say)."""
        with self._lock:
            idle, self._idle = self._idle, []
            for entry in idle:
                self._opened_at.pop(id(entry.raw), None)
        for entry in idle:
            _close(entry.raw)

    def stats(self) -> PoolStats:
        with self._lock:
            return PoolStats(open=len(self._opened_at), lent=self._lent, peak=self._peak,
                             opened=self._opened, waits=self._waits)


def _original_poll() -> Callable[[], Any]:
    """``select.poll`` as the system has it: gevent's would switch to its hub, and
    ``select.select`` refuses descriptors above 1,023 (a busy worker has more sockets)."""
    try:
        from gevent.monkey import get_original
    except ImportError:
        return select.poll
    poll: Callable[[], Any] = get_original("select", "poll")
    return poll


_poll = _original_poll()
_READABLE = select.POLLIN | select.POLLPRI | select.POLLERR | select.POLLHUP


def _alive(raw: Any) -> bool:
    """Whether an idle connection is still open at both ends (its socket has nothing to read)."""
    if raw.closed:
        return False
    try:
        poller = _poll()
        poller.register(raw.fileno(), _READABLE)
        return not poller.poll(0)
    except (OSError, ValueError):
        return False


def _reset(raw: Any) -> bool:
    """Make a connection fit for its next taker (no transaction left open); False if it is not."""
    if raw.closed:
        return False
    try:
        if raw.info.transaction_status != extensions.TRANSACTION_STATUS_IDLE:
            raw.rollback()
        return bool(raw.info.transaction_status == extensions.TRANSACTION_STATUS_IDLE)
    except Exception:  # noqa: BLE001 (a connection that fails here is closed, whatever it raised)
        return False


def _close(raw: Any) -> None:
    try:
        raw.close()
    except Exception:  # noqa: BLE001,S110 (already broken: nothing more to do with it)
        pass
