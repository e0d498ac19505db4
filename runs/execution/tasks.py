"""Getting run work executed: enqueueing a run, the entry points that execute it, and one
reconciler pass (:func:`reconcile`: each worker's :mod:`runs.execution.reconciler` thread runs it,
and so does ``manage.py hango_reconcile``).

With a broker, a Celery task carries the run id to a worker process. Without one (the embedded
quickstart), the same worker service runs on a thread of this process. ``hango().run_inline``
runs it synchronously on commit (tests of the API that do not start a worker). Either way a run
is handed over only once the transaction that queued it has committed.

The calls go one way: services enqueue here; the entry points here call
:mod:`runs.execution.worker`, which returns what happened (an
:class:`~runs.execution.worker.Outcome`, the runs to re-enqueue) and never enqueues anything itself.
Celery tasks are thin: ids in, a worker call out, safe to deliver twice.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from urllib.parse import urlsplit

from celery import Task, shared_task
from django.db import (
    InterfaceError,
    OperationalError,
    close_old_connections,
    connection,
    transaction,
)
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerError

from hango_project.config import hango
from runs import signals
from runs.execution import fairness, handoff, queued_tasks, worker
from runs.execution.timings import RunTimings, current
from runs.execution.worker import Outcome
from runs.models import Run

log = logging.getLogger(__name__)
_executor: ThreadPoolExecutor | None = None
_executor_lock = threading.Lock()


def enqueue_run(run_id: uuid.UUID | str, *, behind: bool | None = None) -> None:
    """Have the run advanced once the current transaction commits (at once outside one).
    ``behind``: whether its tenant is past its fair share, when the caller counted already
    (a post, in its statement); else counted as it is sent."""
    run_id = str(run_id)
    if hango().run_inline:
        transaction.on_commit(lambda: _execute_locally(run_id, close=False))
    elif hango().broker_url:
        transaction.on_commit(lambda: send_run(run_id, priority=(
            fair_priority(run_id) if behind is None
            else PRIORITY_BEHIND if behind else PRIORITY_NORMAL)))
    else:
        transaction.on_commit(lambda: _local_executor().submit(_execute_locally, run_id))


# The order a worker takes run tasks in (Redis: a lower number first). A run the reconciler
# recovers was already under way, or has waited a grace period for a task that never came: it
# goes ahead of the runs waiting to start and the slices handed back, or it would wait behind
# all of them again. Recovered runs are few (a worker died, a send failed), so the others do not
# starve.
PRIORITY_NORMAL = 3
PRIORITY_RECOVERED = 0
# A tenant's runs past its fair share go behind every other run (runs/execution/fairness.py).
PRIORITY_BEHIND = 6


def fair_priority(run_id: str) -> int:
    """The priority a run is sent at: the normal one, or behind it when its tenant is past its
    fair share (:mod:`runs.execution.fairness`)."""
    try:
        behind = fairness.over_fair_share(run_id)
    except (InterfaceError, OperationalError):  # the run is stored: send it, at worst unfairly
        log.warning("run %s goes at the normal priority: its tenant's share was not read",
                    run_id)
        return PRIORITY_NORMAL
    return PRIORITY_BEHIND if behind else PRIORITY_NORMAL


def send_run(run_id: str, *, priority: int = PRIORITY_NORMAL) -> bool:
    """Publish the run's task; False when the broker would not take it. Never raises: the run is
    stored whatever the broker does, and the reconciler sends a queued run nobody took once it
    has waited ``HANGO_RECONCILE_GRACE_SECONDS`` (a crash between commit and send is the same
    case). The settings bound how long a send may take (``HANGO_BROKER_TIMEOUT``, one retry)."""
    try:
        execute_run.apply_async((run_id,), priority=priority)
    except BrokerError as exc:  # down, refused, timed out: the broker's trouble, not a bug here
        log.warning("run %s was not sent to the broker (%s: %s); the reconciler will send it",
                    run_id, type(exc).__name__, _without_password(str(exc)))
        return False
    except Exception:
        log.exception("run %s was not sent to the broker; the reconciler will send it", run_id)
        return False
    return True


def _without_password(text: str) -> str:
    password = urlsplit(hango().broker_url).password
    return text.replace(password, "***") if password else text


def reconcile() -> int:
    """One reconciler pass: send again the active runs nobody is advancing, and start the
    sessions' queues whose start was lost (:func:`runs.execution.queue.start_stalled`); how many
    were sent. It takes them :data:`~runs.execution.handoff.RECONCILE_BATCH` at a time, each batch
    in a transaction of its own, so none holds many rows locked for long.

    With a broker, a batch's runs are sent before it commits, and a failed send undoes it: the
    runs it picked keep their expired lease or old ``updated_at``, so the next pass picks them
    again at once instead of a grace period later. (A worker handed one meanwhile waits for its
    row lock in the claim; one sent twice is skipped by the second claim.)"""
    sent, started = 0, timezone.now()
    # Runs whose tasks wait in the queue are not stranded, however long they have waited, nor
    # are those missed by this pass alone (a task between the list and its reservation). The
    # queue (a backlog of thousands of messages) is read only when some run with no lease is
    # overdue: most passes find none, and an expired lease is taken over whatever it holds.
    knobs = hango()
    grace, sends = knobs.reconcile_grace_seconds, bool(knobs.broker_url) and not knobs.run_inline
    waiting = queued_tasks.left_alone(
        grace, handoff.overdue_unleased(grace=grace, since=started) if sends else frozenset())
    while True:
        batch = _reconcile_batch(started, waiting, grace=grace, sends=sends)
        if batch is None:
            return sent
        sent += batch
        if batch < handoff.RECONCILE_BATCH:
            return sent


def _reconcile_batch(started: datetime, waiting: frozenset[uuid.UUID], *, grace: float,
                     sends: bool) -> int | None:
    """One batch of the pass begun at ``started``: how many runs it sent (to the broker when
    ``sends``, else run here), None when a send failed (nothing changed)."""
    if not sends:
        stranded = handoff.reconcile_runs(grace=grace, since=started)
        for run_id in stranded:
            enqueue_run(run_id)
        return len(stranded)
    with transaction.atomic():
        stranded = handoff.reconcile_runs(grace=grace, since=started, waiting=waiting)
        for run_id in stranded:
            if not send_run(str(run_id), priority=PRIORITY_RECOVERED):
                transaction.set_rollback(True)
                return None
    return len(stranded)


def advance_run(run_id: str, *, waiting: Callable[[], None] | None = None,
                timings: RunTimings | None = None) -> Outcome:
    """Advance the run for one time slice; a run whose slice ran out goes back in the queue, and
    one that ended hands its session on to the next message waiting there. ``waiting`` is
    called now and then while the run waits to start (:func:`runs.execution.worker.execute_run`,
    which ``timings`` are for)."""
    claimed: list[Run] = []
    outcome = worker.execute_run(run_id, waiting=waiting, timings=timings,
                                 claimed=claimed.append)
    if outcome is Outcome.YIELDED:
        enqueue_run(run_id)
    elif outcome in worker.MAY_HAVE_ENDED:
        _tell_ended(run_id, _session_kind(claimed[0]) if claimed else None)
        if started := handoff.start_queued(run_id):
            enqueue_run(started)
    elif (outcome in (Outcome.PAUSED, Outcome.SKIPPED)
          and (started := handoff.cancel_kept_by_a_pause(run_id))):
        enqueue_run(started)
    return outcome


def _session_kind(run: Run) -> str | None:
    """The kind of ``run``'s session if its claim read the session (a claim does), else None."""
    return run.session.kind if Run.session.is_cached(run) else None


def _tell_ended(run_id: str, session_kind: str | None) -> None:
    for receiver, result in signals.run_may_have_ended.send_robust(
            None, run_id=run_id, session_kind=session_kind):
        if isinstance(result, Exception):
            log.error("run %s: %r failed on its end: %r", run_id, receiver, result)


@shared_task(
    name="runs.execute_run",
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=(InterfaceError, OperationalError),  # the database went away mid-run
    retry_backoff=True,
    max_retries=5,
)
def execute_run(self: Task, run_id: str) -> str:
    """Advance a run until it ends or its time slice is used; safe to deliver twice. While the
    run waits for its worker to start it, its reservation is kept fresh for the reconciler."""
    timings = current()
    waiting = queued_tasks.keeper(self.request, timings.reservation_beat)
    return advance_run(run_id, waiting=waiting, timings=timings).value


def _local_executor() -> ThreadPoolExecutor:
    global _executor
    with _executor_lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(max_workers=2, thread_name_prefix="hango-run")
        return _executor


def drain_local_runs() -> None:
    """Wait until no in-process run is under way, including the runs those start (a session's
    next waiting message): the test suite's teardown, so that no run outlives its test."""
    global _executor
    while True:
        with _executor_lock:
            executor, _executor = _executor, None
        if executor is None:
            return
        executor.shutdown(wait=True)


def _execute_locally(run_id: str, *, close: bool = True) -> None:
    try:
        advance_run(run_id)
    except Exception:
        log.exception("in-process run %s failed", run_id)
    finally:
        if close:  # a pool thread must not keep its own connection open forever
            close_old_connections()
            connection.close()
