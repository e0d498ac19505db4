"""The Celery app. Tasks are thin entry points; settings come from Django's CELERY_* names."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hango_project.settings")

app = Celery("hango")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
