"""Handing a run to whoever executes it, once the transaction that created it has committed.

With a broker, a Celery task carries the run id to a worker process. Without one (the embedded
quickstart), the same worker service runs on a thread of this process. ``hango().run_inline``
runs it synchronously on commit (tests of the API that do not start a worker).
"""

from __future__ import annotations

import logging
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor

from django.db import close_old_connections, connection, transaction

from hango_project.config import hango

log = logging.getLogger(__name__)
_executor: ThreadPoolExecutor | None = None
_executor_lock = threading.Lock()


def enqueue_run(run_id: uuid.UUID | str) -> None:
    run_id = str(run_id)
    if hango().run_inline:
        transaction.on_commit(lambda: _execute_locally(run_id, close=False))
    elif hango().broker_url:
        from runs.tasks import execute_run

        execute_run.delay_on_commit(run_id)
    else:
        transaction.on_commit(lambda: _local_executor().submit(_execute_locally, run_id))


def _local_executor() -> ThreadPoolExecutor:
    global _executor
    with _executor_lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(max_workers=2, thread_name_prefix="hango-run")
        return _executor


def _execute_locally(run_id: str, *, close: bool = True) -> None:
    from runs.worker import execute_run

    try:
        execute_run(run_id)
    except Exception:
        log.exception("in-process run %s failed", run_id)
    finally:
        if close:  # a pool thread must not keep its own connection open forever
            close_old_connections()
            connection.close()
