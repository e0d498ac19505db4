"""hango's Celery app with bench_concurrency's stamp: imported into ``make worker``'s group
(``python -m hango_project.worker_group -I bench.concurrency_app``), or
``celery -A bench.concurrency_app worker``.

The app is ``hango_project.celery.app`` itself (hango's tasks, settings and worker), with the
``scripted:workload-<T>`` models the benchmark names (``BENCH_WORKLOAD_TURNS``) wrapped so that
a run's first model call — the one whose request holds no answer of the model yet — is noted
with ``time.time()``, in memory; as the worker shuts down the notes go as ``"<tag> <time>"``
lines onto the end of the file ``BENCH_FIRST_CALLS_FILE`` (every process of a worker group
adds its own). The tag is what follows the prompt's last "#":
the benchmark writes each run's own. (A Redis push per run cost the worker ~0.7 ms of its CPU
a run, a twentieth of what it measures.) It also records each task's delivery and each
reconciler pass (:mod:`bench.overload_trace`), for the timeline of any run sent again, and
notes each run's way to that call and the statements the worker sends, where the benchmark
asks (:mod:`bench.stage_hooks`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

from celery.signals import worker_init, worker_shutdown

from bench import overload_trace, stage_hooks
from bench.workloads import wrap_workloads
from hango_project.celery import app
from harness.messages import Request

_first_calls: list[tuple[str, float]] = []


def _stamp(request: Request) -> None:
    if not any(m.role == "assistant" for m in request.messages):
        _first_calls.append((request.messages[-1].text.rsplit("#", 1)[-1], time.time()))
        stage_hooks.first_call()


@worker_shutdown.connect
def _write_stamps(**_: Any) -> None:
    path = os.environ.get("BENCH_FIRST_CALLS_FILE")
    if path:
        with open(path, "a") as f:  # every process of the worker group adds its own, at once
            f.write("".join(f"{tag} {at}\n" for tag, at in _first_calls))
    overload_trace.write(os.environ.get("BENCH_DELIVERIES_FILE"))


@worker_init.connect
def _trace(**_: Any) -> None:  # each delivery and reconciler pass, for the resent runs' timelines
    overload_trace.install()


class FirstCall:
    """The real provider; a run's first call stamped as it goes out."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.name = inner, inner.name

    def complete(self, request: Request) -> Any:
        _stamp(request)
        return self.inner.complete(request)

    def stream(self, request: Request) -> Iterator[Any]:
        _stamp(request)
        return self.inner.stream(request)


wrap_workloads(FirstCall)
stage_hooks.install()

__all__ = ["app"]
