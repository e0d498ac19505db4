"""Backpressure and fairness on a real worker: it advances at most ``HANGO_WORKER_CONCURRENCY``
runs at once while the queue holds the rest, and one tenant's backlog does not hold up another
tenant's new run, which goes ahead of the backlog's runs past their tenant's fair share."""

from __future__ import annotations

import time

import pytest
from django.db import close_old_connections
from django.db.models import Q

from runs.models import Run
from tests.scenarios.test_celery_workers import start_run
from tests.support.runs import wait_for_run

pytestmark = pytest.mark.slow

SLOTS, SHARE, BACKLOG = 3, 4, 24


def test_another_tenant_s_new_run_starts_ahead_of_one_tenant_s_backlog(
        alice, outsider, make_agent, start_worker, hango_settings):
    hango_settings(tenant_fair_share=SHARE)  # read where runs are sent: this process
    start_worker(HANGO_WORKER_CONCURRENCY=SLOTS, HANGO_SCRIPTED_DELAY_MS=400)
    backlog = [start_run(alice, make_agent, "scripted:workload-2")[1] for _ in range(BACKLOG)]
    wait_for_run(backlog[0], lambda r: r.started_at is not None)
    most_running = 0
    posted = time.monotonic()
    _, newcomer = start_run(outsider, make_agent, "scripted:workload-2")
    while (run := Run.objects.get(pk=newcomer)).started_at is None:
        close_old_connections()
        statuses = list(Run.objects.filter(pk__in=backlog).values_list("status", flat=True))
        most_running = max(most_running, statuses.count("running"))
        # A guard against a hang only: how far ahead it went is counted in runs below.
        assert time.monotonic() - posted < 120, "the newcomer never started"
        time.sleep(0.02)
    close_old_connections()
    later = Run.objects.filter(Q(started_at__isnull=True) | Q(started_at__gt=run.started_at),
                               pk__in=backlog).count()
    # It waited for a slot, not for the backlog (24 runs / 3 slots): it went ahead of the runs
    # past the share. Counted in runs, not seconds, so a loaded machine cannot fail it.
    assert later >= BACKLOG - SHARE - 2 * SLOTS
    assert most_running <= SLOTS  # the worker never took more than its slots
    assert wait_for_run(newcomer).status == "completed"
    for run_id in backlog:
        assert wait_for_run(run_id, timeout=120).status == "completed"
