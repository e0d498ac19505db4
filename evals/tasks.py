"""The eval's Celery entry point: a case moves on when its run ends (:func:`on_run_end`, the
receiver of :data:`runs.signals.run_may_have_ended`). Thin: ids in, :mod:`evals.execution`
out, safe to deliver twice (advancing a case is idempotent)."""

from __future__ import annotations

import logging
import uuid
from typing import Any

from celery import shared_task
from django.db import InterfaceError, OperationalError, transaction

from evals import execution
from evals.models import CaseStatus, EvalCaseResult, EvalRun
from hango_project.config import hango
from runs.models import SessionKind

log = logging.getLogger(__name__)


def on_run_end(sender: Any, *, run_id: str, session_kind: str | None = None,
               **kwargs: Any) -> None:
    """A run's slice ended it, perhaps: its case (if it is an eval's) moves on. No query for a
    run of a session known not to be an eval's; one indexed read when the kind is not known."""
    if session_kind is not None and session_kind != SessionKind.EVAL:
        return
    result_id = (EvalCaseResult.objects.filter(run_id=run_id, status=CaseStatus.RUNNING)
                 .values_list("id", flat=True).first())
    if result_id is not None:
        enqueue_advance(result_id)


def start_cases(eval_run: EvalRun) -> None:
    """Have each case of a new eval run post its first turn, on the workers (concurrently) once
    the current transaction commits."""
    for result_id in eval_run.results.values_list("id", flat=True):
        enqueue_advance(result_id)


def enqueue_advance(result_id: uuid.UUID) -> None:
    """Advance the case once the current transaction commits: on a worker through the broker,
    else in this process."""
    knobs = hango()
    if knobs.broker_url and not knobs.run_inline:
        transaction.on_commit(lambda: _send(str(result_id)))
    else:
        transaction.on_commit(lambda: execution.case_advance(result_id))


def _send(result_id: str) -> None:
    try:
        advance_case.apply_async((result_id,))
    except Exception:  # the broker's trouble: the next read of the eval run advances it
        log.warning("eval case %s was not sent to the broker; its next read advances it",
                    result_id)


@shared_task(name="evals.advance_case", acks_late=True, reject_on_worker_lost=True,
             autoretry_for=(InterfaceError, OperationalError), retry_backoff=True,
             max_retries=5)
def advance_case(result_id: str) -> None:
    execution.case_advance(result_id)
