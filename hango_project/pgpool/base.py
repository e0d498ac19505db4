"""Django's PostgreSQL backend (psycopg2), its connections lent by a process-wide
:class:`~hango_project.pgpool.pool.ConnectionPool`: ``ENGINE = "hango_project.pgpool"``.

Django opens a connection per thread and keeps it until it closes it; here opening takes one
from the pool and closing gives it back, so a thread (a greenlet of a gevent worker, where every
run in flight is one) holds a server connection only between its first statement and the next
:func:`hango_project.pgpool.release` — a run gives its connection back before each model call,
a request at its end. Statements prepared on a connection (:mod:`runs.execution.prepared`) stay with
it from one taker to the next.

Why not a library: Django's own pool needs psycopg 3; django-db-geventpool sends ``SELECT 1``
on every checkout (a second round trip per turn), waits forever for a free connection, and
closes every pooled connection when one is found closed. Under gevent the driver waits through
the hub (:mod:`psycogreen`), installed here when the process is monkey-patched.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from django.db import OperationalError
from django.db.backends.postgresql import base
from django.db.backends.postgresql.psycopg_any import IsolationLevel

from hango_project.pgpool.pool import ConnectionPool, PoolTimeout

__all__ = ["DatabaseWrapper"]


def _cooperate_with_gevent() -> None:
    try:
        from gevent import monkey
    except ImportError:
        return
    if monkey.is_module_patched("socket"):
        from psycogreen.gevent import patch_psycopg

        patch_psycopg()


_cooperate_with_gevent()

_pools: dict[tuple[str, str], ConnectionPool] = {}
_pools_lock = threading.Lock()


def pools() -> list[ConnectionPool]:
    """This process's pools (one per database alias and connection parameters)."""
    with _pools_lock:
        return list(_pools.values())


def _forget_in_child() -> None:
    # A forked child shares its parent's sockets: it must neither use nor close (which would
    # end the parent's sessions) what the parent opened. They are kept, untouched, for ever.
    for pool in _pools.values():
        pool.inherited = True
    _inherited.extend(_pools.values())
    _pools.clear()


_inherited: list[ConnectionPool] = []
os.register_at_fork(after_in_child=_forget_in_child)


class DatabaseWrapper(base.DatabaseWrapper):
    """The postgresql backend with pooled connections. ``OPTIONS`` may hold ``pool_size``,
    ``pool_timeout`` (seconds a waiting take goes on while
    no connection is given back) and ``pool_max_age`` (seconds a connection is kept
    open, None for ever); Django's ``CONN_MAX_AGE`` should be 0, so every request and every task
    gives its connection back at its end."""

    _lent_by: ConnectionPool | None = None  # the pool this wrapper's connection came from
    first_in_line = False  # this thread takes a connection ahead of the others waiting
    _last_pool: tuple[dict[str, Any], ConnectionPool] | None = None
    _parked: ConnectionPool | None = None  # given back by give_back(): take one there again

    def give_back(self) -> None:
        """Give the connection back to its pool between two statements of the same thread,
        outside a transaction (:func:`hango_project.pgpool.release`), keeping this object as it
        is: the next statement takes an idle connection again without Django's whole connect
        (``connect()`` and ``close()`` cost a turn ~0.1 ms)."""
        raw, pool = self.connection, self._lent_by
        assert raw is not None and pool is not None and not self.in_atomic_block
        self.connection, self._lent_by, self._parked = None, None, pool
        pool.give(raw)

    def ensure_connection(self) -> None:
        if self.connection is None and self._parked is not None:
            pool, self._parked = self._parked, None
            try:
                raw = (pool.take_idle(first=self.first_in_line) if not pool.inherited
                       else None)
            except PoolTimeout as exc:  # as a database outage would: the task retries
                raise OperationalError(str(exc)) from None
            if raw is not None:  # opened, set up and given back by this process: as it was
                self.connection, self._lent_by = raw, pool
                self.errors_occurred, self.health_check_done = False, True
                return
        super().ensure_connection()

    def close(self) -> None:
        self._parked = None  # closed means closed: the next statement connects anew
        super().close()

    def get_connection_params(self) -> dict[str, Any]:
        params: dict[str, Any] = super().get_connection_params()
        for option in ("pool_size", "pool_timeout", "pool_max_age"):
            params.pop(option, None)
        return params

    def _pool(self, conn_params: dict[str, Any]) -> ConnectionPool:
        last = self._last_pool
        if last is not None and last[0] == conn_params and not last[1].inherited:
            return last[1]  # a run takes a connection every turn: no lookup
        key = (self.alias, repr(sorted(conn_params.items())))
        with _pools_lock:
            pool = _pools.get(key)
            if pool is None:
                options = self.settings_dict["OPTIONS"]
                pool = _pools[key] = ConnectionPool(
                    size=options.get("pool_size", 10), timeout=options.get("pool_timeout", 30),
                    max_age=options.get("pool_max_age"))
        self._last_pool = (conn_params, pool)
        return pool

    def get_new_connection(self, conn_params: dict[str, Any]) -> Any:
        pool = self._pool(conn_params)
        try:
            raw, new = pool.take(lambda: super(DatabaseWrapper, self).get_new_connection(
                conn_params), first=self.first_in_line)
        except PoolTimeout as exc:
            raise OperationalError(str(exc)) from None
        self._lent_by = pool
        if not new:  # what Django's get_new_connection sets on a connection it opens
            self.isolation_level = IsolationLevel(
                self.settings_dict["OPTIONS"].get("isolation_level",
                                                  IsolationLevel.READ_COMMITTED))
        return raw

    def _close(self) -> None:
        raw, pool = self.connection, self._lent_by
        if raw is None:
            return
        if pool is None:  # not lent by a pool (a test's own connection object): close it
            with self.wrap_database_errors:
                raw.close()
            return
        self._lent_by = self._parked = None
        # Closed inside an atomic block, Django keeps the object until the block ends: it must
        # not go to another taker meanwhile, so it is closed for good.
        pool.give(raw, reuse=not self.in_atomic_block)

    def close_pool(self) -> None:
        super().close_pool()
        for pool in pools():
            pool.close_idle()
