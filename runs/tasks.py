"""Getting run work executed: enqueueing a run, and the entry points that execute it.

With a broker, a Celery task carries the run id to a worker process. Without one (the embedded
quickstart), the same worker service runs on a thread of this process. ``hango().run_inline``
runs it synchronously on commit (tests of the API that do not start a worker). Either way a run
is handed over only once the transaction that queued it has committed.

The calls go one way: services enqueue here; the entry points here call :mod:`runs.worker`,
which returns what happened (an :class:`~runs.worker.Outcome`, the runs to re-enqueue) and
never enqueues anything itself. Celery tasks are thin: ids in, a worker call out, safe to
deliver twice.
"""

from __future__ import annotations

import logging
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, cast

from celery import shared_task
from django.db import OperationalError, close_old_connections, connection, transaction

from hango_project.config import hango
from runs import worker
from runs.worker import Outcome

if TYPE_CHECKING:
    from celery.contrib.django.task import DjangoTask

log = logging.getLogger(__name__)
_executor: ThreadPoolExecutor | None = None
_executor_lock = threading.Lock()


def enqueue_run(run_id: uuid.UUID | str) -> None:
    """Have the run advanced once the current transaction commits (at once outside one)."""
    run_id = str(run_id)
    if hango().run_inline:
        transaction.on_commit(lambda: _execute_locally(run_id, close=False))
    elif hango().broker_url:
        # Celery's Django fixup makes every task a DjangoTask; the stubs type shared_task's Task.
        cast("DjangoTask[[str], str]", execute_run).delay_on_commit(run_id)
    else:
        transaction.on_commit(lambda: _local_executor().submit(_execute_locally, run_id))


def advance_run(run_id: str) -> Outcome:
    """Advance the run for one time slice; a run whose slice ran out goes back in the queue."""
    outcome = worker.execute_run(run_id)
    if outcome is Outcome.YIELDED:
        enqueue_run(run_id)
    return outcome


@shared_task(
    name="runs.execute_run",
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=(OperationalError,),
    retry_backoff=True,
    max_retries=5,
)
def execute_run(run_id: str) -> str:
    """Advance a run until it ends or its time slice is used; safe to deliver twice."""
    return advance_run(run_id).value


@shared_task(name="runs.reconcile_runs", acks_late=True)
def reconcile_runs() -> int:
    """Re-enqueue runs whose worker vanished (lease expired) or whose task was lost."""
    stranded = worker.reconcile_runs()
    for run_id in stranded:
        enqueue_run(run_id)
    if stranded:
        log.info("reconciler re-enqueued %d runs", len(stranded))
    return len(stranded)


def _local_executor() -> ThreadPoolExecutor:
    global _executor
    with _executor_lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(max_workers=2, thread_name_prefix="hango-run")
        return _executor


def _execute_locally(run_id: str, *, close: bool = True) -> None:
    try:
        advance_run(run_id)
    except Exception:
        log.exception("in-process run %s failed", run_id)
    finally:
        if close:  # a pool thread must not keep its own connection open forever
            close_old_connections()
            connection.close()
