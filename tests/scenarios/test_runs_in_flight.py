"""Many runs in flight on one worker process, as ``make worker`` runs it (the gevent pool): a run
waiting on its model holds neither a process nor a database connection, so the runs under way
far outnumber the worker's connections, which stay within its pool."""

from __future__ import annotations

import time

import pytest
from django.db import close_old_connections, connection

from runs.models import UNFINISHED_RUN_STATUSES, Run
from tests.scenarios.test_celery_workers import start_run

pytestmark = pytest.mark.slow

RUNS, POOL = 40, 3
APP = "hango-in-flight-test"  # the worker's connections by name (libpq reads PGAPPNAME)


def _worker_backends() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = %s "
                       "AND datname = current_database()", [APP])
        return int(cursor.fetchone()[0])


def test_forty_runs_wait_on_their_model_at_once_on_three_connections(alice, make_agent,
                                                                    start_worker):
    start_worker(HANGO_SCRIPTED_DELAY_MS=1500, HANGO_DATABASE_POOL_SIZE=POOL,
                 HANGO_WORKER_CONCURRENCY=100, PGAPPNAME=APP)
    run_ids = [start_run(alice, make_agent, "scripted:workload-2")[1] for _ in range(RUNS)]
    most_running = most_backends = 0
    deadline = time.monotonic() + 60
    while True:
        close_old_connections()
        statuses = list(Run.objects.filter(pk__in=run_ids).values_list("status", flat=True))
        most_running = max(most_running, statuses.count("running"))
        most_backends = max(most_backends, _worker_backends())
        if not set(UNFINISHED_RUN_STATUSES) & set(statuses):
            break
        assert time.monotonic() < deadline, statuses
        time.sleep(0.05)
    assert statuses == ["completed"] * RUNS
    # Each run's three model calls took 1.5 s: they overlapped, on a few connections.
    assert most_running >= RUNS * 3 // 4
    # The pool's connections, and the lease watch's own (runs/execution/renewer.py: renewals that no
    # run waiting for the pool can hold up).
    assert 1 <= most_backends <= POOL + 1
