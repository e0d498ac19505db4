"""The one place hango's two database engines differ: what product code asks instead of reading
``connection.vendor``.

hango's server runs on PostgreSQL (many processes, many workers); the quickstart on an embedded
SQLite file (one process). :func:`database` answers the engine of the default connection,
chosen once per process from its vendor; :func:`database_of` a given connection's (a schema
editor's). Two kinds of difference sit behind it:

- **Primitives** each engine does its own way: a time limit on the caller's statements, a
  transaction-scoped lock on a key, a text's size in bytes, the column type of a JSON document
  kept as text. SQLite, a local file with a single writer, needs no limit and no lock.
- **The one-statement paths**: hango's hand-written PostgreSQL statements (PREPAREd once per
  connection, data-modifying CTEs, ``jsonb``), for the hot paths of a run, each with an ORM
  twin for the engine that has none of that. A run's claim, turn commit, poll and lease watch
  are a store per engine, picked once (:mod:`runs.execution.store`); the paths not moved there
  yet still ask :attr:`Database.one_statement` which one runs.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any, Final, Protocol

from django.db import connection, transaction


class Database(Protocol):
    """What differs between the engines hango runs on."""

    vendor: str
    # hango's one-statement PostgreSQL paths run here; where False, each caller's ORM path.
    one_statement: bool

    def statement_timeout(self, seconds: float) -> AbstractContextManager[None]:
        """A block whose statements give up after ``seconds`` (in a transaction where the engine
        needs one for that; a caller's transaction gets its own limit back after)."""
        ...

    def lock(self, key: tuple[int, int]) -> None:
        """In the caller's transaction: take the lock named ``key`` until it ends."""
        ...

    def try_lock(self, key: tuple[int, int]) -> bool:
        """:meth:`lock` when nobody holds it, without waiting: whether it was taken."""
        ...

    def locked_fetch(self, key: tuple[int, int], sql: str,
                     params: Sequence[Any]) -> list[tuple[Any, ...]]:
        """:meth:`lock`, then the rows of ``sql`` read as a statement begun once the lock is
        held (it sees every commit made before the lock was granted)."""
        ...

    def octet_length(self, column: str) -> str:
        """SQL for the size in UTF-8 bytes of the text in ``column`` (an SQL expression)."""
        ...

    def text_json_type(self) -> str | None:
        """The column type of a JSON document kept as its text; None: the field's default."""
        ...


class PostgreSQL:
    vendor = "postgresql"
    one_statement = True

    @contextmanager
    def statement_timeout(self, seconds: float) -> Iterator[None]:
        # Inside a caller's transaction the setting would outlive this block: put it back after.
        nested = connection.in_atomic_block
        with transaction.atomic(), connection.cursor() as cursor:
            if nested:
                cursor.execute("SHOW statement_timeout")
                previous = cursor.fetchone()[0]
            cursor.execute("SELECT set_config('statement_timeout', %s, true)",
                           [f"{max(1, round(seconds * 1000))}ms"])
            yield
            if nested:
                cursor.execute("SELECT set_config('statement_timeout', %s, true)", [previous])

    def lock(self, key: tuple[int, int]) -> None:
        # A transaction-scoped advisory lock, in its two-key form.
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", key)

    def try_lock(self, key: tuple[int, int]) -> bool:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_xact_lock(%s, %s)", key)
            return bool(cursor.fetchone()[0])

    def locked_fetch(self, key: tuple[int, int], sql: str,
                     params: Sequence[Any]) -> list[tuple[Any, ...]]:
        # Two statements in one query string, one round trip: each takes a snapshot of its own
        # as it begins (READ COMMITTED), so the read sees what committed while the lock was
        # awaited. (The lock and the read in one SELECT would share a snapshot taken before.)
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT pg_advisory_xact_lock(%s, %s); {sql}", [*key, *params])
            return cursor.fetchall()

    def octet_length(self, column: str) -> str:
        # Read from the value's header without decompressing it (char_length would).
        return f"OCTET_LENGTH({column})"

    def text_json_type(self) -> str | None:
        return "json"  # the text as written, not jsonb (hango_project.models.TextJSONField)


class SQLite:
    """One local file, one writer at a time (a transaction takes the write lock as it begins:
    the settings make every one IMMEDIATE): no time limits, and no locks beyond that one."""

    vendor = "sqlite"
    one_statement = False

    @contextmanager
    def statement_timeout(self, seconds: float) -> Iterator[None]:
        yield  # no transaction: a read would take the write lock and wait behind every commit

    def lock(self, key: tuple[int, int]) -> None:
        pass  # the transaction holds the database's write lock already

    def try_lock(self, key: tuple[int, int]) -> bool:
        return True

    def locked_fetch(self, key: tuple[int, int], sql: str,
                     params: Sequence[Any]) -> list[tuple[Any, ...]]:
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.fetchall()

    def octet_length(self, column: str) -> str:
        return f"LENGTH(CAST({column} AS BLOB))"  # SQLite before 3.43 has no octet_length

    def text_json_type(self) -> str | None:
        return None


_ENGINES: Final[dict[str, Database]] = {"postgresql": PostgreSQL(), "sqlite": SQLite()}


def database_of(wrapper: Any) -> Database:
    """The engine of ``wrapper`` (a Django database connection)."""
    try:
        return _ENGINES[wrapper.vendor]
    except KeyError:
        raise NotImplementedError(f"hango runs on PostgreSQL or SQLite, not on "
                                  f"{wrapper.vendor}") from None


@functools.cache
def database() -> Database:
    """The engine of the default connection, read once per process."""
    return database_of(connection)
