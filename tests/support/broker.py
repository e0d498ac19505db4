"""The one Redis database this suite is given.

Other suites may share the Redis server, each with a database of its own, so a test reads,
writes and flushes this database and no other.
"""

from __future__ import annotations

import os


def broker_url() -> str:
    """``HANGO_TEST_BROKER_URL``, else the Makefile's default (database 15)."""
    return os.environ.get("HANGO_TEST_BROKER_URL") or "redis://127.0.0.1:6379/15"
