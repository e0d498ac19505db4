"""The Celery app. Tasks are thin entry points; settings come from Django's CELERY_* names."""

import os

from celery import Celery
from celery.signals import worker_init, worker_process_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hango_project.settings")

app = Celery("hango")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


def _instrument(**kwargs: object) -> None:
    from hango_project.telemetry import instrument_celery

    instrument_celery(**kwargs)


worker_init.connect(_instrument, weak=False)
worker_process_init.connect(_instrument, weak=False)
