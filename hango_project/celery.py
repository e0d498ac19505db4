"""The Celery app. Tasks are thin entry points; settings come from Django's CELERY_* names."""

import gc
import os

from celery import Celery
from celery.signals import (
    task_postrun,
    task_prerun,
    worker_init,
    worker_process_init,
    worker_ready,
)

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hango_project.settings")

app = Celery("hango")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
# Each worker's main process runs the reconciler on a thread of its own (not Celery beat: see
# runs/execution/reconciler.py for why). By name: the module needs Django, set up only once a worker
# starts.
app.steps["worker"].add("runs.execution.reconciler:Reconciler")


def _instrument(**kwargs: object) -> None:
    from hango_project.telemetry import instrument_celery

    instrument_celery(**kwargs)


worker_init.connect(_instrument, weak=False)
worker_process_init.connect(_instrument, weak=False)


def _wait_for_the_database(**kwargs: object) -> None:
    """Before the worker takes a task or starts its reconciler: a database still being
    migrated (``make serve`` or the web service migrating as the worker starts) is waited for,
    said in one line, instead of a traceback on every pass."""
    from hango_project.dbready import wait_until_ready

    wait_until_ready()


worker_init.connect(_wait_for_the_database, weak=False)


def _close_old_connections(**kwargs: object) -> None:
    """Django's per-request connection hygiene, per task: a connection that broke or passed
    CONN_MAX_AGE is closed; the others are kept, with the statements prepared on them
    (settings.CELERY_DB_REUSE_MAX keeps Celery's fixup from closing them all)."""
    from django.db import close_old_connections

    close_old_connections()


task_prerun.connect(_close_old_connections, weak=False)
task_postrun.connect(_close_old_connections, weak=False)


# The cyclic garbage collector in a worker. At its defaults (a young collection every 700 net
# allocations) a gevent worker holding 1,000 runs spent about a sixth of its CPU collecting:
# 2.0 s of one core over 1,000 runs of 5 turns (900 young, 80 middle, 7 full collections, the
# full ones walking every run's state and everything Django and the SDKs loaded). With the
# objects loaded at start frozen out of the collections and collections 70 times rarer: 0.5 s,
# the runs' wall time on one process 1.70 x ideal instead of 2.11-2.24 (bench/README.md, "Runs
# in flight"). Cycles wait longer for their collection: at most some 50,000 allocations' worth.
WORKER_GC_THRESHOLD = (50_000, 20, 20)


def _tune_gc(**kwargs: object) -> None:
    gc.set_threshold(*WORKER_GC_THRESHOLD)


def _freeze_what_started(**kwargs: object) -> None:
    gc.collect()
    gc.freeze()  # the modules, settings and clients loaded so far: never garbage
    _tune_gc()


worker_ready.connect(_freeze_what_started, weak=False)  # the gevent worker's one process
worker_process_init.connect(_tune_gc, weak=False)  # a prefork pool's children
