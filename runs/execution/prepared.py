"""Statements PREPAREd once per database connection and EXECUTEd after (the driver, psycopg2,
binds parameters client-side, so PostgreSQL would parse and plan each call anew)."""

from __future__ import annotations

import re
import weakref
from dataclasses import dataclass
from typing import Any

from django.db import DatabaseError
from django.db.backends.utils import CursorWrapper
from psycopg2.errors import InvalidSqlStatementName


@dataclass(frozen=True)
class Prepared:
    """A statement PREPAREd once per connection, then EXECUTEd with positional values: parsing
    and planning the turn's statement took a third of a turn."""

    name: str
    parameters: tuple[tuple[str, str], ...]  # (name, type) in PREPARE's order
    prepare: str
    execute: str

    @classmethod
    def of(cls, name: str, sql: str, parameters: tuple[tuple[str, str], ...]) -> Prepared:
        """``sql`` with ``%(name)s`` parameters, as PREPARE's ``$n``."""
        position = {key: n for n, (key, _) in enumerate(parameters, start=1)}
        body = re.sub(r"%\((\w+)\)s", lambda m: f"${position[m[1]]}", sql)
        types = ", ".join(kind for _, kind in parameters)
        return cls(name, parameters, f"PREPARE {name} ({types}) AS {body}",
                   f"EXECUTE {name} ({', '.join(['%s'] * len(parameters))})")

    def run(self, cursor: CursorWrapper, params: dict[str, Any]) -> None:
        """EXECUTE it on ``cursor`` (Django's), preparing it first on a connection that has not.
        A server that lost it (``DEALLOCATE``, ``DISCARD ALL``) gets it prepared again; in
        autocommit the failed EXECUTE changed nothing (in a transaction the error is the
        caller's)."""
        values = [params[key] for key, _ in self.parameters]
        db = cursor.db  # the cursor's connection: ``django.db.connection`` costs 2.5 µs a look
        prepared = _prepared.setdefault(db.connection, set())
        if self.name not in prepared:
            cursor.execute(self.prepare)
            prepared.add(self.name)
        try:
            cursor.execute(self.execute, values)
        except DatabaseError as exc:
            if (not isinstance(exc.__cause__, InvalidSqlStatementName)
                    or db.in_atomic_block):
                raise
            cursor.execute(self.prepare)
            cursor.execute(self.execute, values)


# The statements each open DB-API connection has prepared. One lives as long as its server
# session: a connection Django re-opens is a new object, found here with none.
_prepared: weakref.WeakKeyDictionary[Any, set[str]] = weakref.WeakKeyDictionary()
