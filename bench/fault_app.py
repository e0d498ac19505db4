"""hango's Celery app with the fault suite's model served: ``celery -A bench.fault_app worker``.

The app object is ``hango_project.celery.app`` itself, so the worker runs hango's tasks with
hango's settings; the only addition is ``scripted:faults`` (:mod:`bench.faults_model`) in the
provider registry, registered before the prefork pool forks its children.
"""

from bench.faults_model import register
from hango_project.celery import app

register()

__all__ = ["app"]
