"""The worker's timings derived from the settings in one place (runs/execution/timings.py)."""

from __future__ import annotations

import math
from datetime import timedelta

from hango_project.config import hango
from runs.execution.timings import run_timings


def test_the_beats_are_derived_from_the_lease_the_poll_and_the_grace():
    given = run_timings(hango().replace(
        run_lease_seconds=9.0, cancel_poll_seconds=0.5, run_slice_seconds=120,
        reconcile_seconds=7, reconcile_grace_seconds=30, broker_timeout=2.0))
    assert given.lease == timedelta(seconds=9)
    assert given.renewal_beat == 3.0  # a third of the lease: two renewals may fail
    assert given.renewal_lock_wait == 1.0  # a third of a beat
    assert (given.cancel_poll, given.watch_read) == (0.5, 0.25)  # read twice per poll
    assert (given.slice, given.reconcile_every, given.reconcile_grace) == (120, 7, 30)
    assert given.reservation_beat == 7.5  # a quarter of the grace period
    assert given.reconciler_stop_wait == 5.0  # a send and its retry, and a second


def test_no_poll_interval_means_no_watch_read_and_a_short_grace_a_floor_beat():
    given = run_timings(hango().replace(cancel_poll_seconds=0, reconcile_grace_seconds=0))
    assert math.isinf(given.watch_read)  # every check reads its own row
    assert given.reservation_beat == 0.5
