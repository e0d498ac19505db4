import os
from importlib import import_module

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hango_project.settings")
application = get_wsgi_application()

# A server with no broker has no worker: it runs the workers' reconciler thread itself (by name,
# as the Celery app adds it to workers: the project's package imports no app).
import_module("runs.execution.reconciler").start_without_workers()
