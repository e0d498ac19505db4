"""The reconciler's clock: every Celery worker's main process runs a reconciler pass
(:func:`runs.execution.tasks.reconcile`) every ``HANGO_RECONCILE_SECONDS`` on a thread of its own.

Why here and not elsewhere:

- Not Celery beat. Beat only *sends* a task, and that task waits in the run queue behind the
  run tasks; with every worker busy on long slices, passes due every few seconds ran minutes
  late. An embedded beat is also a process of its own, which outlived a ``kill -9`` of its
  worker.
- Not the worker's own timer. With the solo pool that timer does not fire while a task runs;
  with prefork it fires on the event loop, which a pass (a query, a send) would block.
- A thread keeps time whatever the pool does, and dies with its process. Every worker runs one:
  concurrent passes are safe (the pass locks the rows it takes with ``SKIP LOCKED`` and marks
  them handled), more workers only mean more frequent passes.

The first pass runs as the worker starts, so runs stranded while no worker was up move at once.

Apps above ``runs`` add passes of their own to the same thread (:func:`register`, from their
``AppConfig.ready``), each on its own beat: schedules fire from here every second, with no
process of their own to keep alive and no import of theirs in ``runs``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from celery import bootsteps
from django.db import close_old_connections, connection

from hango_project.config import hango
from runs.execution import queued_tasks, tasks
from runs.execution.timings import current
from webhooks import tasks as webhook_tasks

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Pass:
    """Work the reconciler's thread does every ``every()`` seconds: ``run`` answers what it
    did, for the log (empty when nothing)."""

    name: str
    run: Callable[[], str]
    every: Callable[[], float]


_passes: list[Pass] = []


def register(name: str, run: Callable[[], str], every: Callable[[], float]) -> None:
    """Add a pass to every worker's reconciler thread (once per name)."""
    if all(p.name != name for p in _passes):
        _passes.append(Pass(name, run, every))


def reconcile() -> str:
    """The thread's own pass: runs nobody advances sent again, due webhook deliveries handed
    on."""
    sent = tasks.reconcile()
    resent = webhook_tasks.send_due()
    said = [f"re-enqueued {sent} runs" if sent else "",
            f"handed on {resent} due webhook deliveries" if resent else ""]
    return ", ".join(filter(None, said))


class ReconcilerThread:
    """Runs its reconciler pass now and then every ``interval`` seconds until stopped, and each
    registered pass on its own beat; a pass that fails (a database outage, say) is tried again
    at its next beat."""

    def __init__(self, interval: float, *, stop_wait: float) -> None:
        if interval <= 0:
            raise ValueError("the reconciler interval must be positive")
        self.interval = interval
        self.stop_wait = stop_wait  # how long stop() waits for a pass under way
        self._own = Pass("reconciler", reconcile, lambda: interval)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="hango-reconciler", daemon=True)
        self._due: dict[str, float] = {}  # a pass's name → when it is next due

    def start(self) -> None:
        self._thread.start()

    def stop(self, *, wait: bool = True) -> None:
        self._stop.set()
        if wait:  # a pass under way ends within its sends' bound; a daemon never holds up exit
            self._thread.join(timeout=self.stop_wait)

    def _run(self) -> None:
        try:
            while True:
                for due in [self._own, *_passes]:
                    if time.monotonic() >= self._due.get(due.name, 0.0):
                        self._beat(due)
                soonest = min(self._due.values())
                if self._stop.wait(max(0.0, soonest - time.monotonic())):
                    return
        finally:
            connection.close()  # this thread's own

    def _beat(self, due: Pass) -> None:
        try:
            close_old_connections()  # a connection the database dropped is not reused
            done = due.run()
        except Exception:  # a database outage, say: its next beat tries again
            log.exception("the %s pass failed", due.name)
            done = ""
        finally:
            connection.close()  # back to its pool between passes (PostgreSQL)
        if done:
            log.info("%s %s", due.name, done)
        self._due[due.name] = time.monotonic() + due.every()


_embedded: ReconcilerThread | None = None


def start_without_workers() -> None:
    """In a server with no broker (the embedded quickstart: runs execute on threads of this
    process, and no worker exists), run the workers' thread here: schedules fire, runs stranded
    by a stop continue, due webhook deliveries go. Once per process; nothing with a broker (the
    workers run it) or inline runs (tests)."""
    global _embedded
    knobs = hango()
    if knobs.broker_url or knobs.run_inline or _embedded is not None:
        return
    timings = current()
    _embedded = ReconcilerThread(timings.reconcile_every, stop_wait=timings.reconciler_stop_wait)
    _embedded.start()


class Reconciler(bootsteps.StartStopStep):
    """The worker bootstep that starts :class:`ReconcilerThread` with the worker and stops it
    at shutdown (registered in :mod:`hango_project.celery`), and the renewal of the process's
    task reservations (:func:`runs.execution.queued_tasks.start_renewing`)."""

    label = "Reconciler"
    requires = ("celery.worker.components:Pool",)  # the pool's children fork before it starts

    def __init__(self, parent: object, **kwargs: object) -> None:
        super().__init__(parent, **kwargs)
        self.thread: ReconcilerThread | None = None

    def start(self, parent: object) -> None:
        timings = current()
        self.thread = ReconcilerThread(timings.reconcile_every,
                                       stop_wait=timings.reconciler_stop_wait)
        self.thread.start()
        queued_tasks.start_renewing(timings.reservation_beat)  # what the pass reads, kept recent

    def stop(self, parent: object) -> None:
        if self.thread is not None:
            self.thread.stop()

    def terminate(self, parent: object) -> None:  # a cold shutdown waits for nothing
        if self.thread is not None:
            self.thread.stop(wait=False)
