"""The process's watch over the runs it advances: one thread per process, started on first use
(again after a fork), that keeps their leases alive and reads, for all of them in one statement,
whether a cancel was asked for.

A lease is short (a dead worker's run is picked up again quickly) yet must outlast a model call
that takes minutes, so it is renewed in the background every third of its length: every held
run's lease in one statement (:data:`runs.execution.renewer.RENEW`), from an operating-system thread
with a database connection of its own (:mod:`runs.execution.renewer` says why a greenlet of the
runs' hub, renewing one run per transaction, lost live workers' leases under load). One thread per
run cost each run a thread start — the run waited for the new thread to be scheduled, 1–3 ms of its
start on a busy machine — a join at its end and a database connection of its own.

A run stops at its next check once a cancel is asked for, or once its claim was taken over
(:class:`runs.execution.checkpointer.DbControl`), seeing what is at most
``HANGO_CANCEL_POLL_SECONDS`` old. Each run reading its row before its tools cost a round trip a
tool turn — a fifth of a worker's CPU with a thousand runs in flight, and a seventh of PostgreSQL's.
Here the watch reads every held run's flag and epoch in one statement twice per poll interval, and a
run reads its own row only when the watch has fallen behind (the database slow, or the watch's last
read failed). What a read or a renewal finds is told to the runs' controls where the runs run (their
hub, under gevent). A run only adds itself to the set and takes itself out.
"""

from __future__ import annotations

import functools
import logging
import os
import time
import uuid
from collections.abc import Callable
from typing import Protocol

from django.db import DatabaseError
from django.utils import timezone

from runs.execution.renewer import (
    Key,
    Statements,
    Wake,
    hand_to_runs,
    os_lock,
    start_thread,
)
from runs.execution.store import store
from runs.execution.timings import RunTimings
from runs.models import Run

log = logging.getLogger(__name__)


class Control(Protocol):
    """What a run's loop checks (:class:`runs.execution.checkpointer.DbControl`)."""

    superseded: bool  # set when its lease was found taken over

    def observed(self, flag: bool, at: float) -> None:
        """The run's cancel flag as read at ``at`` (``time.monotonic()``), under its claim."""
        ...


class _Watch:
    """The process's watching thread and the runs it watches: (run id, epoch) → the run's
    control, told what each read found."""

    def __init__(self) -> None:
        self._lock = os_lock()  # the runs' greenlets and the thread share it
        self._held: dict[Key, Control] = {}
        self._wake = Wake()
        self._until = float("inf")  # when the thread's wait ends (monotonic)
        self._timings: RunTimings | None = None  # the last added run's worker's
        self._started = False
        # How the thread tells a run's control what it found: where the runs run.
        self._tell: Callable[[Callable[[], None]], None] = lambda fn: fn()

    def add(self, run_id: uuid.UUID, epoch: int, control: Control, timings: RunTimings) -> None:
        due = time.monotonic() + min(timings.renewal_beat, timings.watch_read)
        with self._lock:
            self._held[(run_id, epoch)] = control
            self._timings = timings
            start, self._started = not self._started, True
            wake = not start and due < self._until  # idle, or the timings got shorter
        if start:  # once per process: the runs after it start none
            try:
                self._tell = hand_to_runs()  # the hub of the runs (the first one's)
                statements = store().watch_statements()
                start_thread(lambda: self._watch(statements))
            except BaseException:  # the next run tries again
                with self._lock:
                    self._started = False
                raise
        elif wake:
            self._wake.set()

    def remove(self, run_id: uuid.UUID, epoch: int) -> None:
        with self._lock:
            self._held.pop((run_id, epoch), None)

    def _watch(self, statements: Statements) -> None:
        try:
            self._run(statements)
        except BaseException:
            log.exception("the run watch stopped; the next run to start starts it again")
            raise
        finally:
            statements.close()
            with self._lock:
                self._started = False

    def _run(self, statements: Statements) -> None:
        # The last renewal beat and the last read; None while no run is held. A run comes with
        # its lease fresh and its flag just read by its claim: the first beat and the first
        # read are due an interval after the first run.
        renewed: float | None = None
        read: float | None = None
        while True:
            with self._lock:
                held = list(self._held.items())
                timings = self._timings
            beat, read_every = ((timings.renewal_beat, timings.watch_read) if timings
                                else (float("inf"), float("inf")))
            now = time.monotonic()
            if not held or timings is None:  # (timings: set by the first add())
                renewed = read = None
            elif renewed is None or read is None:
                renewed = read = now
            else:
                try:  # reads first: a renewal may wait for a row lock (a third of a beat)
                    if now - read >= read_every:
                        read = now
                        self._read(statements, held)
                    if now - renewed >= beat:
                        renewed = now
                        self._renew_all(statements, held, timings)
                except Exception:  # the watch must outlive any one beat's trouble
                    log.exception("the run watch's beat failed; the next one tries again")
                    statements.close()
            with self._lock:  # add() reads when this wait ends, under the same lock
                now = time.monotonic()
                if not self._held:
                    self._until = float("inf")
                elif renewed is None or read is None:  # a run came since the snapshot
                    self._until = now
                else:
                    self._until = min(renewed + beat, read + read_every)
                wait = None if self._until == float("inf") else max(0.0, self._until - now)
            if wait is None:  # idle: no connection held for nothing
                statements.close()
            self._wake.wait(wait)

    def _renew_all(self, statements: Statements, held: list[tuple[Key, Control]],
                   timings: RunTimings) -> None:
        """Every held run's lease in one statement; a run found lost is told to stop (its
        commit would be refused: it was taken over, or ended)."""
        lost = statements.renew([key for key, _ in held], timezone.now() + timings.lease,
                                lock_wait=timings.renewal_lock_wait)
        for key, control in held:
            if key in lost:
                self.remove(*key)
                self._tell(functools.partial(_supersede, control))

    def _read(self, statements: Statements, held: list[tuple[Key, Control]]) -> None:
        """Every held run's cancel flag and claim, read at once and told to its control. A read
        that fails tells nothing: each run reads its own row until the next one succeeds."""
        at = time.monotonic()
        try:
            news = statements.read([key for key, _ in held])
        except DatabaseError:
            log.warning("the run watch could not read the cancel flags", exc_info=True)
            statements.close()
            return
        told: list[tuple[Control, tuple[bool, bool]]] = []
        for key, control in held:
            found = news.get(key, (False, True))
            if found is None:  # no row to read (deleted; its commit will be refused)
                continue
            if not found[1]:
                self.remove(*key)
            told.append((control, found))
        self._tell(lambda: _observe(told, at))


def _supersede(control: Control) -> None:
    control.superseded = True  # the loop stops at its next check


def _observe(told: list[tuple[Control, tuple[bool, bool]]], at: float) -> None:
    for control, (asked, holds) in told:
        control.observed(asked, at)
        if not holds:
            control.superseded = True




_watch = _Watch()


_inherited: list[_Watch] = []


def _forget_in_child() -> None:
    # A forked child (a prefork pool's process) has no watching thread, and no runs yet. The
    # parent's watch is kept, untouched: closing its connection would end the parent's session.
    global _watch
    _inherited.append(_watch)
    _watch = _Watch()


os.register_at_fork(after_in_child=_forget_in_child)


class LeaseKeeper:
    """Renews the claimed run's lease while the worker advances it, on the beats of
    ``timings``; it stops renewing once the run is taken over (and tells ``control``) or the
    block ends."""

    def __init__(self, run: Run, control: Control, timings: RunTimings) -> None:
        self.run_id, self.epoch, self.control = run.pk, run.epoch, control
        self.timings = timings

    def __enter__(self) -> LeaseKeeper:
        _watch.add(self.run_id, self.epoch, self.control, self.timings)
        return self

    def __exit__(self, *exc: object) -> None:
        _watch.remove(self.run_id, self.epoch)
