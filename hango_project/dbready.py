"""Whether the database is ready for hango: reachable.

``make serve`` migrates a database that must exist first: :func:`check_database_reachable`, a
system check ``migrate`` runs, turns a missing database into one error that says how to create
it, not a driver traceback.
"""

from __future__ import annotations

from typing import Any

from django.core.checks import CheckMessage, Error, Tags, register
from django.db import DEFAULT_DB_ALIAS, OperationalError, connections


def _one_line(exc: Exception) -> str:
    """The driver's reason on one line (psycopg2 puts its hint on a line of its own)."""
    return " ".join(str(exc).split()) or type(exc).__name__


def unreachable(alias: str = DEFAULT_DB_ALIAS) -> str | None:
    """Why the database cannot be connected to, in one line; None when it can."""
    try:
        connections[alias].ensure_connection()
    except OperationalError as exc:
        return _one_line(exc)
    return None


def _createdb_hint(alias: str) -> str:
    settings = connections[alias].settings_dict
    options = [f"-h {settings['HOST']}" if settings.get("HOST") else "",
               f"-p {settings['PORT']}" if settings.get("PORT") else "",
               f"-U {settings['USER']}" if settings.get("USER") else ""]
    return " ".join(["createdb", *filter(None, options), str(settings["NAME"])])


@register(Tags.database)
def check_database_reachable(app_configs: Any = None, databases: Any = None,
                             **kwargs: Any) -> list[CheckMessage]:
    """The databases a command works on (``migrate`` asks for its own) can be connected to."""
    errors: list[CheckMessage] = []
    for alias in databases or ():
        reason = unreachable(alias)
        if reason is None:
            continue
        missing = "does not exist" in reason
        hint = (f"Create it first: {_createdb_hint(alias)}" if missing else
                "Is the database server running, and DATABASE_URL right?")
        errors.append(Error(f"Cannot connect to the database: {reason}", hint=hint,
                            id="hango.E001"))
    return errors
