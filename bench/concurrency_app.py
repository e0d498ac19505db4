"""hango's Celery app with bench_concurrency's stamp: ``celery -A bench.concurrency_app worker``.

The app is ``hango_project.celery.app`` itself (hango's tasks, settings and worker), with the
``scripted:workload-<T>`` models the benchmark names (``BENCH_WORKLOAD_TURNS``) wrapped so that
a run's first model call — the one whose request holds no answer of the model yet — pushes
``"<tag> <time.time()>"`` onto the Redis list ``BENCH_FIRST_CALLS_KEY`` of the broker. The tag
is what follows the prompt's last "#": the benchmark writes each run's own.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

import redis

from hango_project.celery import app
from harness.messages import Request
from harness.providers import registry

FIRST_CALLS_KEY = os.environ.get("BENCH_FIRST_CALLS_KEY", "bench:first-calls")
_client: redis.Redis | None = None


def _stamp(request: Request) -> None:
    global _client
    if any(m.role == "assistant" for m in request.messages):
        return
    if _client is None:
        _client = redis.Redis.from_url(app.conf.broker_url)
    tag = request.messages[-1].text.rsplit("#", 1)[-1]
    _client.rpush(FIRST_CALLS_KEY, f"{tag} {time.time()}")


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


def _register() -> None:
    real = registry.factory("scripted")
    assert real is not None
    for turns in filter(None, os.environ.get("BENCH_WORKLOAD_TURNS", "").split(",")):
        registry.add(f"scripted:workload-{int(turns)}",
                     lambda name, knobs: FirstCall(real(name, knobs)))


_register()

__all__ = ["app"]
