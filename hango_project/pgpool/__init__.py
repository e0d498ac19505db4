"""Pooled PostgreSQL connections (the database backend in :mod:`hango_project.pgpool.base`),
and :func:`release`, which a thread calls where it is about to wait on something else."""

from __future__ import annotations

from django.db import connections


def release(alias: str = "default") -> None:
    """Give this thread's connection back to its pool, unless it is inside a transaction (then
    it keeps it). Nothing happens on a database that is not pooled (the embedded SQLite)."""
    from hango_project.pgpool.base import DatabaseWrapper

    db = connections[alias]
    if (isinstance(db, DatabaseWrapper) and db.connection is not None
            and not db.in_atomic_block and db._lent_by is not None):
        db.give_back()
