"""The scripted workload models a benchmark's worker serves, each wrapped for its stamps."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from harness.providers import registry


def wrap_workloads(wrap: Callable[[Any], Any]) -> None:
    """Serve every ``scripted:workload-<T>`` the benchmark names (``BENCH_WORKLOAD_TURNS``,
    comma separated) by the real scripted model inside ``wrap``."""
    real = registry.factory("scripted")
    assert real is not None
    for turns in filter(None, os.environ.get("BENCH_WORKLOAD_TURNS", "").split(",")):
        registry.add(f"scripted:workload-{int(turns)}",
                     lambda name, knobs: wrap(real(name, knobs)))
