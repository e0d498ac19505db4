"""Plain queries for the reads a run makes before its first model call (the history, the
overrides, memory, the file listing). Their SQL takes tens of microseconds; building the same
query through the ORM took ten times that, on every run."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from django.db import connection
from django.db.models import UUIDField

_UUID = UUIDField()


def uuid_param(value: uuid.UUID | str) -> Any:
    """An id as the database stores it: a uuid in PostgreSQL, hex text in SQLite (which refuses
    a ``uuid.UUID`` parameter)."""
    return _UUID.get_db_prep_value(value, connection)


def fetch(sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()
