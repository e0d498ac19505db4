"""hango's Celery app with the lease benchmark's model: ``celery -A leases_app worker``, run with
this directory on ``PYTHONPATH`` and the tree under test as the working directory, so the same
file serves the code before the lease change and after it (:mod:`bench.leases_load`).

``scripted:hog-<T>`` is the shared workload of T tool turns (``scripted:workload-<T>``) whose
every call first keeps the CPU for ``BENCH_HOG_MS`` without yielding — a heavy turn's CPU under
gevent: a long history serialized, a tokenizer — and then waits the scripted delay
(``HANGO_SCRIPTED_DELAY_MS``, a gevent sleep) as a model's answer would.
"""

from __future__ import annotations

import os
import time
from typing import Any

from hango_project.celery import app
from harness.providers import registry

HOG_SECONDS = int(os.environ.get("BENCH_HOG_MS", "0")) / 1000


class Hog:
    def __init__(self, inner: Any) -> None:
        self.inner, self.name = inner, inner.name

    def complete(self, request: Any) -> Any:
        end = time.perf_counter() + HOG_SECONDS
        while time.perf_counter() < end:  # no yield: every other greenlet waits
            pass
        return self.inner.complete(request)


def _serve(turns: int) -> None:
    real = registry.factory("scripted")
    assert real is not None
    registry.add(f"scripted:hog-{turns}",
                 lambda name, knobs: Hog(real(f"workload-{turns}", knobs)))


for _turns in filter(None, os.environ.get("BENCH_HOG_TURNS", "").split(",")):
    _serve(int(_turns))

__all__ = ["app"]
