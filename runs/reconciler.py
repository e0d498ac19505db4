"""The reconciler's clock: every Celery worker's main process runs a reconciler pass
(:func:`runs.tasks.reconcile`) every ``HANGO_RECONCILE_SECONDS`` on a thread of its own.

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
"""

from __future__ import annotations

import logging
import threading

from celery import bootsteps
from django.db import close_old_connections, connection

from hango_project.config import hango
from runs import tasks
from webhooks import tasks as webhook_tasks

log = logging.getLogger(__name__)


class ReconcilerThread:
    """Runs a reconciler pass now and then every ``interval`` seconds until stopped."""

    def __init__(self, interval: float) -> None:
        if interval <= 0:
            raise ValueError("the reconciler interval must be positive")
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="hango-reconciler", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, *, wait: bool = True) -> None:
        self._stop.set()
        if wait:  # a pass under way ends within its sends' bound; a daemon never holds up exit
            self._thread.join(timeout=2 * hango().broker_timeout + 1)

    def _run(self) -> None:
        try:
            while True:
                self._pass()
                if self._stop.wait(self.interval):
                    return
        finally:
            connection.close()  # this thread's own

    def _pass(self) -> None:
        try:
            close_old_connections()  # a connection the database dropped is not reused
            sent = tasks.reconcile()
            resent = webhook_tasks.send_due()
        except Exception:  # a database outage, say: the next pass tries again
            log.exception("reconciler pass failed; next one in %ss", self.interval)
            return
        finally:
            connection.close()  # back to its pool between passes (PostgreSQL)
        if sent:
            log.info("reconciler re-enqueued %d runs", sent)
        if resent:
            log.info("reconciler handed on %d due webhook deliveries", resent)


class Reconciler(bootsteps.StartStopStep):
    """The worker bootstep that starts :class:`ReconcilerThread` with the worker and stops it
    at shutdown (registered in :mod:`hango_project.celery`)."""

    label = "Reconciler"
    requires = ("celery.worker.components:Pool",)  # the pool's children fork before it starts

    def __init__(self, parent: object, **kwargs: object) -> None:
        super().__init__(parent, **kwargs)
        self.thread: ReconcilerThread | None = None

    def start(self, parent: object) -> None:
        self.thread = ReconcilerThread(hango().reconcile_seconds)
        self.thread.start()

    def stop(self, parent: object) -> None:
        if self.thread is not None:
            self.thread.stop()

    def terminate(self, parent: object) -> None:  # a cold shutdown waits for nothing
        if self.thread is not None:
            self.thread.stop(wait=False)
