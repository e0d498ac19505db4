"""The server's metrics an operator alerts on (issue 35): runs started and ended, their duration
and queue wait, each worker's runs in flight, lease take-overs and fenced slices, webhook
deliveries and quota refusals. Their names and attributes are in :mod:`harness.telemetry` (the
one list); the model's and the tools' metrics are recorded by the harness itself.

Every attribute is few-valued (an outcome, an event type, where a quota refused): never a run,
session or tenant id, so a series per value stays affordable. Recording is a few microseconds
with an SDK installed and next to nothing without one; nothing here reads the database.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from datetime import datetime

from django.utils import timezone
from opentelemetry import metrics
from opentelemetry.metrics import CallbackOptions, Observation

from harness import telemetry as t

_meter = metrics.get_meter("hango.server")

runs_started = _meter.create_counter(
    t.METRIC_RUNS_STARTED, description="Runs claimed for the first time (they began to run).")
runs_ended = _meter.create_counter(
    t.METRIC_RUNS_ENDED, description="Runs that ended, by hango.run.outcome.")
run_duration = _meter.create_histogram(
    t.METRIC_RUN_DURATION, unit="s",
    description="From a run's post to its end (approval pauses included), by outcome.")
queue_wait = _meter.create_histogram(
    t.METRIC_QUEUE_WAIT, unit="s", description="From a run's post to its first claim.")
slices = _meter.create_counter(
    t.METRIC_SLICES, description="Time slices workers gave runs, by hango.run.slice.outcome.")
lease_takeovers = _meter.create_counter(
    t.METRIC_LEASE_TAKEOVERS,
    description="Runs whose lease expired under a holder and were taken from it, by "
                "hango.run.takeover.by (claim: another worker's claim; reconciler).")
fenced = _meter.create_counter(
    t.METRIC_FENCED,
    description="Slices stopped because another worker had claimed the run (fenced commits).")
webhook_deliveries = _meter.create_counter(
    t.METRIC_WEBHOOK_DELIVERIES,
    description="Webhook attempts, by hango.webhook.outcome (succeeded, retrying, failed).")
quota_refusals = _meter.create_counter(
    t.METRIC_QUOTA_REFUSALS,
    description="Token-quota refusals, by hango.quota.where (admission: a post or resume "
                "answered 402; run: a run stopped mid-way).")

_in_flight = 0
_in_flight_lock = threading.Lock()


def _observe_in_flight(options: CallbackOptions) -> Iterable[Observation]:
    yield Observation(_in_flight)


# Per process: the resource's service.instance.id (host:pid) tells the workers apart.
_meter.create_observable_gauge(t.METRIC_RUNS_IN_FLIGHT, callbacks=[_observe_in_flight],
                               description="Runs this worker process is advancing now.")


class in_flight:  # noqa: N801 (used as a function: ``with in_flight():``)
    """Count a run as in flight in this process while the block runs (an integer's change: the
    gauge reads it when the metrics are exported)."""

    def __enter__(self) -> None:
        global _in_flight
        with _in_flight_lock:
            _in_flight += 1

    def __exit__(self, *exc: object) -> None:
        global _in_flight
        with _in_flight_lock:
            _in_flight -= 1


def seconds_since(moment: datetime | None, now: datetime | None = None) -> float:
    if moment is None:
        return 0.0
    return max(((now or timezone.now()) - moment).total_seconds(), 0.0)


def run_started(created_at: datetime | None, now: datetime) -> None:
    """A run's first claim: counted, and how long it waited since its post."""
    runs_started.add(1)
    queue_wait.record(seconds_since(created_at, now))


def run_ended(outcome: str, created_at: datetime | None) -> None:
    """A run ended (completed, failed or cancelled): counted, and its duration since its post."""
    attrs = {t.ATTR_RUN_OUTCOME: outcome}
    runs_ended.add(1, attrs)
    run_duration.record(seconds_since(created_at), attrs)


def lease_taken_over(by: str, count: int = 1) -> None:
    """Leases that expired under a holder, taken ``by`` a claim or the reconciler."""
    lease_takeovers.add(count, {t.ATTR_TAKEOVER_BY: by})


def quota_refused(where: str) -> None:
    quota_refusals.add(1, {t.ATTR_QUOTA_WHERE: where})
