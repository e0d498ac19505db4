"""Reading a context store once per run, in ``before_run``, without letting it fail the run."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from harness import telemetry

log = logging.getLogger(__name__)
T = TypeVar("T")


def load_or_none(load: Callable[[], list[T]], *, middleware: str, run_id: str) -> list[T] | None:
    """What ``load`` returns, or None when it raised: a slow or broken store leaves the run
    without that context (logged, and a ``middleware.store_load_failed`` span event)."""
    try:
        return load()
    except Exception as exc:
        log.warning("%s load failed for run %s", middleware, run_id, exc_info=True)
        telemetry.record_event(telemetry.EVENT_STORE_LOAD_FAILED, {
            telemetry.ATTR_MIDDLEWARE_NAME: middleware,
            telemetry.ATTR_REASON: type(exc).__name__,
        })
        return None
