"""A worker tunes its garbage collector once it is ready: what it loaded to start is frozen out
of the collections, and young collections come 70 times rarer (hango_project/celery.py)."""

from __future__ import annotations

import gc

from celery.signals import worker_process_init, worker_ready

from hango_project import celery


def test_a_ready_worker_freezes_what_it_loaded_and_collects_rarely():
    assert celery._freeze_what_started in [r[1] for r in worker_ready.receivers]
    assert celery._tune_gc in [r[1] for r in worker_process_init.receivers]
    before = gc.get_threshold()
    try:
        celery._freeze_what_started()
        assert gc.get_threshold() == celery.WORKER_GC_THRESHOLD
        assert gc.get_freeze_count() > 10_000  # Django, the apps, the SDKs: all loaded here
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
