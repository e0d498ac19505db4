"""A Celery worker keeps its database connection from one task to the next (Django's
CONN_MAX_AGE decides, as for requests), and with it the statements it prepared there: a run
does not start by reconnecting."""

from __future__ import annotations

import pytest
from django.db import connection

from tests.scenarios.test_celery_workers import start_run
from tests.support.runs import wait_for_run

pytestmark = pytest.mark.slow


def _run_backends() -> set[int]:
    """The backends on the test database that executed a run's statements (a turn's commit is
    the last thing a run's task sends), still open."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                       "AND query LIKE 'EXECUTE hango%'")
        return {pid for (pid,) in cursor.fetchall()}


def test_a_worker_reuses_its_connection(alice, make_agent, start_worker):
    start_worker()
    seen: set[int] = set()
    for _ in range(4):
        _, run_id = start_run(alice, make_agent, "scripted:workload-3")
        assert wait_for_run(run_id).status == "completed"
        seen |= _run_backends()
    # Kept between tasks, not one a task: the run's connection, and at most one more that
    # another greenlet of the process took while a run held the first (both lent by the
    # process's pool; the run watch has a connection of its own, and prepares nothing).
    assert 1 <= len(seen) <= 2, seen
