"""The Celery app. Tasks are thin entry points; settings come from Django's CELERY_* names."""

import os

from celery import Celery
from celery.signals import task_postrun, task_prerun, worker_init, worker_process_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hango_project.settings")

app = Celery("hango")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
# Each worker's main process runs the reconciler on a thread of its own (not Celery beat: see
# runs/reconciler.py for why). By name: the module needs Django, set up only once a worker starts.
app.steps["worker"].add("runs.reconciler:Reconciler")


def _instrument(**kwargs: object) -> None:
    from hango_project.telemetry import instrument_celery

    instrument_celery(**kwargs)


worker_init.connect(_instrument, weak=False)
worker_process_init.connect(_instrument, weak=False)


def _close_old_connections(**kwargs: object) -> None:
    """Django's per-request connection hygiene, per task: a connection that broke or passed
    CONN_MAX_AGE is closed; the others are kept, with the statements prepared on them
    (settings.CELERY_DB_REUSE_MAX keeps Celery's fixup from closing them all)."""
    from django.db import close_old_connections

    close_old_connections()


task_prerun.connect(_close_old_connections, weak=False)
task_postrun.connect(_close_old_connections, weak=False)
