"""What overload leaves in a worker's log, counted: the figures bench_concurrency reports beside
its times (issue 35: overload must wait, not fail)."""

from __future__ import annotations

import re

# A statement that gave up waiting for its process's pool (hango_project/pgpool/pool.py).
POOL_TIMEOUT = "database connections of this process stayed in use for"
# redis-py's pool refusing a taker, a Redis command failing to connect or answer, live deltas
# dropped after a failed publish (runs/live/redis.py).
REDIS_ERRORS = re.compile(r"MaxConnectionsError|Too many connections|No connection available|"
                          r"redis\.exceptions\.(?:Connection|Timeout)Error|"
                          r"publishing to Redis at \S+ failed")
RESCUED = re.compile(r"reconciler re-enqueued (\d+) runs")
# Overdue runs a pass found neither queued nor reserved, left for the next pass to look again
# (runs/execution/queued_tasks.py): a task between the list and its reservation, most often.
MISSED = re.compile(r"(\d+) overdue queued runs were neither queued nor reserved")


def overload_counts(text: str) -> dict[str, int]:
    """Lines of a worker log's ``text``: pool timeouts, Redis connection errors, task retries,
    runs resumed after losing their database, the runs the reconciler sent again, and the runs
    a pass missed in the broker and left for the next one to look again."""
    lines = text.splitlines()
    return {
        "pool_timeouts": sum(POOL_TIMEOUT in line for line in lines),
        "redis_errors": sum(bool(REDIS_ERRORS.search(line)) for line in lines),
        "retries": sum("runs.execute_run" in line and " retry: " in line for line in lines),
        "lost_database": sum("lost its database" in line for line in lines),
        "rescued": sum(int(n) for n in RESCUED.findall(text)),
        "missed_once": sum(int(n) for n in MISSED.findall(text)),
    }
