"""The process's watch over the runs it advances: one thread per process (a greenlet in a
gevent worker), started on first use (again after a fork), that keeps their leases alive and
reads, for all of them in one statement, whether a cancel was asked for.

A lease is short (a dead worker's run is picked up again quickly) yet must outlast a model call
that takes minutes, so it is renewed in the background every third of its length. One thread per
run cost each run a thread start — the run waited for the new thread to be scheduled, 1–3 ms of
its start on a busy machine — a join at its end and a database connection of its own.

A run stops at its next check once a cancel is asked for, or once its claim was taken over
(:class:`runs.checkpointer.DbControl`), seeing what is at most ``HANGO_CANCEL_POLL_SECONDS`` old.
Each run reading its row before its tools cost a round trip a tool turn — a fifth of a worker's CPU
with a thousand runs in flight, and a seventh of PostgreSQL's. Here the watch reads every held
run's flag and epoch in one statement twice per poll interval, and a run reads its own row only
when the watch has fallen behind (the database slow, or the watch's last read failed). The watch
holds a connection only while it reads or renews, and takes it from the process's pool ahead of
the runs waiting for one (:func:`hango_project.pgpool.first_in_line`): behind them, under load,
its reads came seconds late and the runs read their rows again. A run only adds itself to the
set and takes itself out.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import uuid
from datetime import timedelta
from typing import Protocol

from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from hango_project.config import hango
from hango_project.database import database
from hango_project.pgpool import first_in_line
from runs.models import Run, RunStatus
from runs.prepared import Prepared

log = logging.getLogger(__name__)


class Control(Protocol):
    """What a run's loop checks (:class:`runs.checkpointer.DbControl`)."""

    superseded: bool  # set when its lease was found taken over

    def observed(self, flag: bool, at: float) -> None:
        """The run's cancel flag as read at ``at`` (``time.monotonic()``), under its claim."""
        ...


def lease_length() -> timedelta:
    return timedelta(seconds=hango().run_lease_seconds)


# The held runs a read has news of: a cancel asked for, a claim taken over (or the run no longer
# running), or no row at all. The ids and epochs go as two array literals; most reads answer no
# row, so the watch's cost hardly grows with the runs it holds.
_READ = Prepared.of(
    "hango_watch",
    f"SELECT w.id, w.epoch, r.cancel_requested, r.epoch = w.epoch AND r.status = %(running)s "
    f"FROM unnest(%(ids)s::uuid[], %(epochs)s::bigint[]) AS w(id, epoch) "
    f"LEFT JOIN {Run._meta.db_table} r ON r.id = w.id "
    f"WHERE r.id IS NULL OR r.cancel_requested OR r.epoch <> w.epoch "
    f"OR r.status <> %(running)s",
    (("ids", "text"), ("epochs", "text"), ("running", "text")))

Key = tuple[uuid.UUID, int]  # a held run: its id and the epoch its claim holds
News = tuple[bool, bool] | None  # (cancel asked for, still held), or None: the run has no row


class _Watch:
    """The process's watching thread and the runs it watches: (run id, epoch) → the run's
    control, told what each read found."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[Key, tuple[Control, str]] = {}  # the control, the id as text
        self._wake = threading.Event()
        self._until = float("inf")  # when the thread's wait ends (monotonic)
        self._thread: threading.Thread | None = None

    def add(self, run_id: uuid.UUID, epoch: int, control: Control) -> None:
        due = time.monotonic() + min(_intervals())
        with self._lock:
            self._held[(run_id, epoch)] = control, str(run_id)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="run-watch", daemon=True)
                self._thread.start()  # once per process: the runs after it start none
            elif due < self._until:  # idle, or the settings got shorter: beat now
                self._wake.set()

    def remove(self, run_id: uuid.UUID, epoch: int) -> None:
        with self._lock:
            self._held.pop((run_id, epoch), None)

    def _run(self) -> None:
        first_in_line()  # one statement answers for every run held: it waits behind none of them
        # The last renewal beat and the last read; None while no run is held. A run comes with
        # its lease fresh and its flag just read by its claim: the first beat and the first
        # read are due an interval after the first run.
        renewed: float | None = None
        read: float | None = None
        while True:
            beat, read_every = _intervals()
            with self._lock:
                held = list(self._held.items())
            now = time.monotonic()
            if not held:
                renewed = read = None
            elif renewed is None or read is None:
                renewed = read = now
            else:
                try:  # reads first: a renewal may wait for a row lock (a third of a beat)
                    if now - read >= read_every:
                        read = now
                        self._read(held)
                    if now - renewed >= beat:
                        renewed = now
                        self._renew_all(held)
                except Exception:  # the watch must outlive any one beat's trouble
                    log.exception("the run watch's beat failed; the next one tries again")
                finally:  # no connection held between beats: back to the pool for the runs
                    connection.close()
            with self._lock:  # add() reads when this wait ends, under the same lock
                now = time.monotonic()
                if not self._held:
                    self._until = float("inf")
                elif renewed is None or read is None:  # a run came since the snapshot
                    self._until = now
                else:
                    self._until = min(renewed + beat, read + read_every)
                wait = None if self._until == float("inf") else max(0.0, self._until - now)
            self._wake.wait(wait)
            self._wake.clear()

    def _renew_all(self, held: list[tuple[Key, tuple[Control, str]]]) -> None:
        for (run_id, epoch), (control, _) in held:
            if not _renew(run_id, epoch):
                control.superseded = True  # the loop stops at its next check
                self.remove(run_id, epoch)

    def _read(self, held: list[tuple[Key, tuple[Control, str]]]) -> None:
        """Every held run's cancel flag and claim, read at once and told to its control. A read
        that fails tells nothing: each run reads its own row until the next one succeeds."""
        at = time.monotonic()
        try:
            news = _news(held)
        except DatabaseError:
            log.warning("the run watch could not read the cancel flags", exc_info=True)
            connection.close()
            return
        for key, (control, _) in held:
            found = news.get(key, (False, True))
            if found is None:  # no row to read (deleted; its commit will be refused)
                continue
            asked, holds = found
            control.observed(asked, at)
            if not holds:
                control.superseded = True
                self.remove(*key)


def _intervals() -> tuple[float, float]:
    """The watch's two beats: lease renewal, and reading the cancel flags twice per poll
    interval (so a run always finds a read younger than the interval; none with no interval,
    where every check reads its own)."""
    knobs = hango()
    poll = knobs.cancel_poll_seconds
    return knobs.run_lease_seconds / 3, poll / 2 if poll > 0 else float("inf")


def _news(held: list[tuple[Key, tuple[Control, str]]]) -> dict[Key, News]:
    """What the database says of the held runs it has news of (the rest: not cancelled, still
    held)."""
    if not database().one_statement:
        return _news_read_by_the_orm([key for key, _ in held])
    with connection.cursor() as cursor:
        _READ.run(cursor, {"ids": "{" + ",".join(text for _, (_, text) in held) + "}",
                           "epochs": "{" + ",".join(str(epoch) for (_, epoch), _ in held) + "}",
                           "running": RunStatus.RUNNING})
        return {(run_id, epoch): None if asked is None else (asked, holds)
                for run_id, epoch, asked, holds in cursor.fetchall()}


def _news_read_by_the_orm(keys: list[Key]) -> dict[Key, News]:
    rows = Run.objects.filter(pk__in=[run_id for run_id, _ in keys]).values_list(
        "pk", "cancel_requested", "epoch", "status")
    now = {pk: (asked, epoch, status) for pk, asked, epoch, status in rows}
    return {(run_id, epoch): (None if run_id not in now else
                              (now[run_id][0], now[run_id][1:] == (epoch, RunStatus.RUNNING)))
            for run_id, epoch in keys}


def _renew(run_id: uuid.UUID, epoch: int) -> bool:
    """False when the run is no longer held under ``epoch`` (taken over, or finished). A
    renewal that waits for the run's row lock gives up after a third of a beat: one run's row
    held elsewhere must not hold up the other runs' renewals."""
    try:
        with transaction.atomic():
            database().lock_timeout(hango().run_lease_seconds * 0.111)  # a beat's third
            return bool(Run.objects.filter(pk=run_id, epoch=epoch, status=RunStatus.RUNNING)
                        .update(lease_expires_at=timezone.now() + lease_length()))
    except DatabaseError:  # missed once (the database restarting? a lock?): next beat
        log.warning("lease renewal for run %s failed", run_id, exc_info=True)
        connection.close()  # this thread's own connection; the next beat opens another
        return True


_watch = _Watch()


def _forget_in_child() -> None:
    # A forked child (a prefork pool's process) has no watching thread, and no runs yet.
    global _watch
    _watch = _Watch()


os.register_at_fork(after_in_child=_forget_in_child)


class LeaseKeeper:
    """Renews the claimed run's lease while the worker advances it; it stops renewing once the
    run is taken over (and tells ``control``) or the block ends."""

    def __init__(self, run: Run, control: Control) -> None:
        self.run_id, self.epoch, self.control = run.pk, run.epoch, control

    def __enter__(self) -> LeaseKeeper:
        _watch.add(self.run_id, self.epoch, self.control)
        return self

    def __exit__(self, *exc: object) -> None:
        _watch.remove(self.run_id, self.epoch)
