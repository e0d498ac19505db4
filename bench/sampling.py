"""Sampling what a benchmark's processes hold while it runs: a thread taking each probe's value
every so often, on a PostgreSQL connection of its own."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

Probe = Callable[[Any], float]  # a cursor of the sampler's connection -> a value


class Sampler:
    """Runs every probe every ``every`` seconds from :meth:`start` to :meth:`stop`, which
    answers each probe's values in order."""

    def __init__(self, probes: dict[str, Probe], *, every: float) -> None:
        self.probes, self.every = probes, every
        self.values: dict[str, list[float]] = {name: [] for name in probes}
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> Sampler:
        self._thread.start()
        return self

    def stop(self) -> dict[str, list[float]]:
        self._done.set()
        self._thread.join()
        return self.values

    def _run(self) -> None:
        import psycopg2

        conn = psycopg2.connect(os.environ["DATABASE_URL"])
        conn.autocommit = True
        try:
            with conn.cursor() as cur:
                while not self._done.is_set():
                    for name, probe in self.probes.items():
                        self.values[name].append(probe(cur))
                    self._done.wait(self.every)
        finally:
            conn.close()


def connections_named(name: str) -> Probe:
    """The database connections whose ``application_name`` is ``name`` (libpq's PGAPPNAME)."""

    def probe(cur: Any) -> float:
        cur.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", [name])
        return float(cur.fetchone()[0])

    return probe
