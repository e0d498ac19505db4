"""Pooled PostgreSQL connections (the database backend in :mod:`hango_project.pgpool.base`),
:func:`release`, which a thread calls where it is about to wait on something else, and
:func:`first_in_line`, for a thread that must not wait behind the others for a connection."""

from __future__ import annotations

from django.db import connections


def first_in_line(first: bool = True, alias: str = "default") -> bool:
    """From now on this thread takes a pooled connection ahead of the threads waiting for one
    (the next one given back is its), or with ``first`` False in line again: for a thread whose
    statement answers for many others. Whether it was first in line before (False on a
    database that is not pooled, where nothing happens)."""
    from hango_project.pgpool.base import DatabaseWrapper

    db = connections[alias]
    if not isinstance(db, DatabaseWrapper):
        return False
    was, db.first_in_line = db.first_in_line, first
    return was


def release(alias: str = "default") -> None:
    """Give this thread's connection back to its pool, unless it is inside a transaction (then
    it keeps it). Nothing happens on a database that is not pooled (the embedded SQLite)."""
    from hango_project.pgpool.base import DatabaseWrapper

    db = connections[alias]
    if (isinstance(db, DatabaseWrapper) and db.connection is not None
            and not db.in_atomic_block and db._lent_by is not None):
        db.give_back()
