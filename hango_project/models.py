"""Model fields the apps share."""

from __future__ import annotations

from typing import Any

from django.db import models

from hango_project.database import database_of


class TextJSONField(models.JSONField):
    """JSON kept in PostgreSQL as ``json`` (the text as written) rather than ``jsonb``: for a
    document always written whole and read whole, never queried into.

    A run's checkpointed state is such a document, rewritten at every turn. As text it is a
    quarter smaller than as ``jsonb`` (no per-entry offsets, no numerics), so each turn's update
    logs that much less (``bench/bench_wal.py``), and the server only checks the text's syntax.
    No JSON lookups work on it (none is made)."""

    def db_type(self, connection: Any) -> str | None:
        return database_of(connection).text_json_type() or super().db_type(connection)

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        if value is not None and not isinstance(value, str):  # psycopg2 decodes json itself
            return value
        return super().from_db_value(value, expression, connection)
