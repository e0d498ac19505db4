"""A cheaper flush after each test that commits (``transactional_db``), on either engine.

Django empties the database after such a test with ``TRUNCATE`` of every table, then re-creates
the content types and permissions (the ``post_migrate`` signal). On PostgreSQL a ``TRUNCATE``
gives each table and index a new file: about half a second for the 37 tables, most of them
empty, and the re-creation as long again, after each of some 500 tests. Instead:

- the tables are emptied with ``DELETE`` in one transaction (the foreign keys are checked at its
  commit, so the order does not matter): a few milliseconds when tables hold a test's few rows;
  on PostgreSQL a ``VACUUM`` then frees the deleted rows' space, so that the next test's rows
  find pages as empty as a ``TRUNCATE`` leaves them (an update stays HOT, the WAL a test
  measures is its own: tests/runs/execution/test_turn_commit.py);
- the content types and permissions stay, as a test inside a transaction leaves them: they are
  the models' own, the same in every test, so ``post_migrate`` finds them all and adds nothing.

A test that asks for its sequences reset (``reset_sequences=True``) is flushed Django's way.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from django.db import connection

KEPT = frozenset({"django_content_type", "auth_permission"})


@contextmanager
def delete_instead_of_truncate() -> Iterator[None]:
    ops = type(connection.ops)
    truncate = ops.sql_flush

    def sql_flush(self: Any, style: Any, tables: list[str], *, reset_sequences: bool = False,
                  allow_cascade: bool = False) -> list[str]:
        tables = [table for table in tables if table not in KEPT]
        if reset_sequences:
            return truncate(self, style, tables, reset_sequences=True,
                            allow_cascade=allow_cascade)
        return [f"DELETE FROM {self.quote_name(table)}" for table in tables]

    def execute_sql_flush(self: Any, sql_list: list[str]) -> None:
        execute(self, sql_list)
        deleted = [sql.removeprefix("DELETE FROM ") for sql in sql_list
                   if sql.startswith("DELETE FROM ")]
        if deleted and self.connection.vendor == "postgresql":
            with self.connection.cursor() as cursor:  # autocommit: VACUUM runs in none
                cursor.execute("VACUUM " + ", ".join(deleted))

    execute = ops.execute_sql_flush
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ops, "sql_flush", sql_flush)
        patch.setattr(ops, "execute_sql_flush", execute_sql_flush)
        yield
