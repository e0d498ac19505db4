"""The Celery app. Tasks are thin entry points; settings come from Django's CELERY_* names."""

import os

from celery import Celery
from celery.signals import worker_init, worker_process_init

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
