"""The context inspector's gauge: how many overrides each tenant has, read when metrics are
collected (a metric reader's interval; never on a request path)."""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import Count
from opentelemetry import metrics
from opentelemetry.metrics import CallbackOptions, Observation

from harness import telemetry


def active_overrides(options: CallbackOptions) -> Iterable[Observation]:
    from context.models import ContextOverride  # apps are loaded by the time metrics are read

    rows = ContextOverride.objects.values("tenant_id").annotate(n=Count("id"))
    return [Observation(row["n"], {telemetry.ATTR_TENANT_ID: str(row["tenant_id"])})
            for row in rows]


def register() -> None:
    metrics.get_meter("hango.context").create_observable_gauge(
        telemetry.METRIC_CONTEXT_OVERRIDES_ACTIVE, callbacks=[active_overrides],
        description="Context overrides stored, per tenant (agent and session ones together).")
