"""Keeping a worker's leases alive: one renewing thread per process, for every run it advances.

A lease is short (a dead worker's run is picked up again quickly) yet must outlast a model call
that takes minutes, so it is renewed in the background every third of its length. One thread per
run cost each run a thread start — the run waited for the new thread to be scheduled, 1–3 ms of
its start on a busy machine — a join at its end and a database connection of its own. Here one
daemon thread per process (a greenlet in a gevent worker), started on first use (again after a
fork), renews each held lease, holding a connection only while it does; a run only adds itself
to the set and takes itself out.
"""

from __future__ import annotations

import logging
import os
import threading
import uuid
from datetime import timedelta
from typing import Protocol

from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from hango_project.config import hango
from runs.models import Run, RunStatus

log = logging.getLogger(__name__)


class Control(Protocol):
    """What a run's loop checks (:class:`runs.worker.DbControl`): set when its lease was found
    taken over."""

    superseded: bool


def lease_length() -> timedelta:
    return timedelta(seconds=hango().run_lease_seconds)


class _Renewer:
    """The process's renewing thread and the leases it keeps: (run id, epoch) → the run's
    control, told when its lease was found taken over."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[tuple[uuid.UUID, int], Control] = {}
        self._wake = threading.Event()
        self._interval = 0.0  # the wait the thread is in; 0 while none is running
        self._thread: threading.Thread | None = None

    def add(self, run_id: uuid.UUID, epoch: int, control: Control) -> None:
        interval = hango().run_lease_seconds / 3
        with self._lock:
            self._held[(run_id, epoch)] = control
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="lease-renewer",
                                                daemon=True)
                self._interval = interval
                self._thread.start()  # once per process: the runs after it start none
            elif interval < self._interval:  # leases got shorter (settings changed): beat now
                self._wake.set()

    def remove(self, run_id: uuid.UUID, epoch: int) -> None:
        with self._lock:
            self._held.pop((run_id, epoch), None)
            if not self._held:
                self._wake.set()  # the thread gives its connection back

    def _run(self) -> None:
        while True:
            self._wake.wait(self._interval)
            self._wake.clear()
            self._interval = hango().run_lease_seconds / 3
            with self._lock:
                held = list(self._held.items())
            for (run_id, epoch), control in held:
                if not self._renew(run_id, epoch):
                    control.superseded = True  # the loop stops at its next check
                    self.remove(run_id, epoch)
            # Hold no connection between beats: with a pool (PostgreSQL) it goes back for the
            # runs to use; a run shorter than a beat never makes this thread take one.
            connection.close()

    @staticmethod
    def _renew(run_id: uuid.UUID, epoch: int) -> bool:
        """False when the run is no longer held under ``epoch`` (taken over, or finished). A
        renewal that waits for the run's row lock gives up after a third of a beat: one run's
        row held elsewhere must not hold up the other runs' renewals."""
        try:
            with transaction.atomic():
                if connection.vendor == "postgresql":
                    with connection.cursor() as cursor:
                        cursor.execute("SELECT set_config('lock_timeout', %s, true)",
                                       [f"{max(1, round(hango().run_lease_seconds * 111))}ms"])
                return bool(Run.objects.filter(pk=run_id, epoch=epoch, status=RunStatus.RUNNING)
                            .update(lease_expires_at=timezone.now() + lease_length()))
        except DatabaseError:  # missed once (the database restarting? a lock?): next beat
            log.warning("lease renewal for run %s failed", run_id, exc_info=True)
            connection.close()  # this thread's own connection; the next beat opens another
            return True


_renewer = _Renewer()


def _forget_in_child() -> None:
    # A forked child (a prefork pool's process) has no renewing thread, and no runs yet.
    global _renewer
    _renewer = _Renewer()


os.register_at_fork(after_in_child=_forget_in_child)


class LeaseKeeper:
    """Renews the claimed run's lease while the worker advances it; it stops renewing once the
    run is taken over (and tells ``control``) or the block ends."""

    def __init__(self, run: Run, control: Control) -> None:
        self.run_id, self.epoch, self.control = run.pk, run.epoch, control

    def __enter__(self) -> LeaseKeeper:
        _renewer.add(self.run_id, self.epoch, self.control)
        return self

    def __exit__(self, *exc: object) -> None:
        _renewer.remove(self.run_id, self.epoch)
