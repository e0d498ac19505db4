"""Celery entry points: thin, idempotent, ids in, a service call out."""

from __future__ import annotations

from celery import shared_task
from django.db import OperationalError

from runs import worker


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
    return worker.execute_run(run_id)


@shared_task(name="runs.reconcile_runs", acks_late=True)
def reconcile_runs() -> int:
    """Re-enqueue runs whose worker vanished (lease expired) or whose task was lost."""
    return worker.reconcile_runs()
