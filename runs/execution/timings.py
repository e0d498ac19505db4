"""The clock a worker keeps: every interval the worker side runs on, derived from the settings in
one place (:func:`run_timings`) and handed to what uses it — the claim, the lease watch, the
control and checkpointer of a slice, the start gate and the reconciler — so that each signature
says what it depends on, and a test tunes a worker by passing values.

The beats are derived from a few settings: a lease is renewed every third of its length (two
renewals may fail before it runs out), a renewal waits for a row lock at most a third of a beat,
the cancel flags are read twice per poll interval (a run always finds a read younger than the
interval), and a worker process keeps its tasks' reservations fresh every quarter of the
reconciler's grace period (the reconciler then knows a live worker holds it).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from hango_project.config import HangoSettings, hango


@dataclass(frozen=True)
class RunTimings:
    """The worker side's intervals, in seconds unless said otherwise."""

    lease: timedelta  # how long a claim holds a run without a renewal
    renewal_beat: float  # how often the watch renews its runs' leases
    renewal_lock_wait: float  # how long a renewal waits for a run's row lock
    cancel_poll: float  # how old a run's cancel flag may be before a tool call reads it
    watch_read: float  # how often the watch reads its runs' cancel flags (inf: never)
    slice: float  # how long a worker advances a run before handing it back
    reconcile_every: float  # how often a worker's reconciler thread runs its pass
    reconcile_grace: float  # how long a run nobody holds waits before the reconciler sends it
    reservation_beat: float  # how often a process keeps its tasks' reservations fresh
    reconciler_stop_wait: float  # how long a stopping worker waits for a pass under way


def run_timings(knobs: HangoSettings) -> RunTimings:
    """The timings derived from ``knobs`` (the settings), once for what a worker runs."""
    beat = knobs.run_lease_seconds / 3
    poll = knobs.cancel_poll_seconds
    return RunTimings(
        lease=timedelta(seconds=knobs.run_lease_seconds),
        renewal_beat=beat,
        renewal_lock_wait=beat / 3,
        cancel_poll=poll,
        watch_read=poll / 2 if poll > 0 else float("inf"),
        slice=knobs.run_slice_seconds,
        reconcile_every=knobs.reconcile_seconds,
        reconcile_grace=knobs.reconcile_grace_seconds,
        reservation_beat=max(0.5, knobs.reconcile_grace_seconds / 4),
        # A pass's sends are bounded by the broker's timeout, with one retry.
        reconciler_stop_wait=2 * knobs.broker_timeout + 1,
    )


def current() -> RunTimings:
    """The timings of this process's settings (where an entry point starts a worker's work)."""
    return run_timings(hango())
