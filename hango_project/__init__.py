"""hango's Django project: settings, URLs, the Celery app, WSGI/ASGI entry points."""

from hango_project.celery import app as celery_app

__all__ = ["celery_app"]
