"""Sampling what a benchmark's processes hold while it runs: a thread taking each probe's value
every so often, on a PostgreSQL connection of its own."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

Probe = Callable[[Any], float]  # a cursor of the sampler's connection -> a value


def pct(xs: list[float], p: float) -> float:
    """The ``p``-th percentile of ``xs`` (nearest rank; NaN for none): every benchmark's."""
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))] if xs else float("nan")


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
    """The database connections whose ``application_name`` is ``name`` (libpq's PGAPPNAME), to
    the sampler's own database: another benchmark's processes of the same name, on another
    database of the machine, are not counted."""

    def probe(cur: Any) -> float:
        cur.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = %s "
                    "AND datname = current_database()", [name])
        return float(cur.fetchone()[0])

    return probe


def cpu_seconds(pid: int) -> float:
    """CPU seconds process ``pid`` of this machine has run (its schedstat); 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/schedstat") as f:
            return int(f.read().split()[0]) / 1e9
    except OSError:
        return 0.0


def pids_named(*names: str) -> list[int]:
    """This machine's processes whose command name is one of ``names`` (PostgreSQL's server
    processes are all ``postgres``; Redis is ``redis-server``)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/comm") as f:
                    if f.read().strip() in names:
                        found.append(int(entry))
            except OSError:
                continue
    return found


class CpuMeter:
    """The CPU each group of processes spent between :meth:`start` and :meth:`stop`: a group
    is a function answering its pids. A thread reads them every ``every`` seconds, so a process
    that ends meanwhile (a peer's database connections, closed as the peer exits) counts what
    it had spent at its last read; one that starts meanwhile counts from 0."""

    def __init__(self, groups: dict[str, Callable[[], list[int]]], *,
                 every: float = 0.25) -> None:
        self.groups, self.every = groups, every
        self._start: dict[str, dict[int, float]] = {}
        self._last: dict[str, dict[int, float]] = {}
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _read(self) -> None:
        for name, pids in self.groups.items():
            seen = self._last.setdefault(name, {})
            for pid in pids():
                seen[pid] = max(seen.get(pid, 0.0), cpu_seconds(pid))

    def _run(self) -> None:
        while not self._done.wait(self.every):
            self._read()

    def start(self) -> CpuMeter:
        self._read()
        self._start = {name: dict(seen) for name, seen in self._last.items()}
        self._thread.start()
        return self

    def stop(self) -> dict[str, float]:
        self._done.set()
        self._thread.join()
        self._read()
        return {name: sum(cpu - self._start[name].get(pid, 0.0)
                          for pid, cpu in self._last[name].items())
                for name in self.groups}


def backends_of(database: str | None = None) -> Callable[[], list[int]]:
    """A :class:`CpuMeter` group: the PostgreSQL backends connected to ``database`` (the
    benchmark's own, ``DATABASE_URL``'s, by default), read on a connection of its own that it
    leaves out — not every ``postgres`` process of the machine, where other databases' backends
    (another benchmark, a test suite) would count as this one's. The server's own processes
    (checkpointer, WAL writer, autovacuum) serve every database and are left out too."""
    conn: Any = None

    def pids() -> list[int]:
        nonlocal conn
        import psycopg2

        if conn is None or conn.closed:
            conn = psycopg2.connect(os.environ["DATABASE_URL"])
            conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute("SELECT pid FROM pg_stat_activity WHERE datname = "
                        "coalesce(%s, current_database()) AND pid <> pg_backend_pid()",
                        [database])
            return [pid for (pid,) in cur.fetchall()]

    return pids
