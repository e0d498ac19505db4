"""Whether the database is ready for hango: reachable, and every migration applied.

A new user meets both gaps on the way to a running stack. ``make serve`` migrates a database
that must exist first: :func:`check_database_reachable`, a system check ``migrate`` runs, turns
a missing database into one error that says how to create it, not a driver traceback. And a
worker started while ``migrate`` is still running (``make worker`` in the next terminal, or
``docker compose up`` starting both at once) would find no tables: every pass of its reconciler
thread a traceback. A worker waits in :func:`wait_until_ready` instead, before it takes a task
(:mod:`hango_project.celery`), saying in one line what it waits for.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any, Literal, NamedTuple

from django.core.checks import CheckMessage, Error, Tags, register
from django.db import DEFAULT_DB_ALIAS, DatabaseError, OperationalError, connections
from django.db.migrations.executor import MigrationExecutor

log = logging.getLogger("hango.dbready")

POLL_SECONDS = 2.0
REMIND_SECONDS = 60.0


class NotReady(NamedTuple):
    """What the database lacks: ``kind`` says which gap, ``reason`` says it in one line."""

    kind: Literal["unreachable", "migrations"]
    reason: str


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


def unapplied(alias: str = DEFAULT_DB_ALIAS) -> list[str]:
    """The migrations ``migrate`` would apply, in its order ("runs.0011_webhooks")."""
    executor = MigrationExecutor(connections[alias])
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    return [f"{migration.app_label}.{migration.name}" for migration, _ in plan]


def not_ready(alias: str = DEFAULT_DB_ALIAS) -> NotReady | None:
    """What keeps the database from serving a worker; None when nothing does."""
    reason = unreachable(alias)
    if reason is not None:
        return NotReady("unreachable", f"the database cannot be reached ({reason})")
    try:
        pending = unapplied(alias)
    except DatabaseError as exc:  # the connection lost since, say: the next poll looks again
        return NotReady("unreachable", f"the database cannot be read ({_one_line(exc)})")
    if pending:
        return NotReady("migrations", f"migrations not applied yet: {len(pending)}, the next "
                                      f"{pending[0]} (`manage.py migrate` applies them)")
    return None


def wait_until_ready(*, alias: str = DEFAULT_DB_ALIAS, poll: float = POLL_SECONDS,
                     remind: float = REMIND_SECONDS,
                     sleep: Callable[[float], None] = time.sleep) -> None:
    """Return once the database is reachable and migrated; meanwhile poll it every ``poll``
    seconds, logging one line each time what it waits for changes (not each migration that
    lands), and again every ``remind`` seconds of the same wait: a database never created, a
    wrong password or host wait forever, and a worker that said so once would look merely
    idle."""
    said: str | None = None
    polls_a_reminder = max(1, round(remind / poll)) if poll > 0 else 1
    same = 0
    try:
        while (gap := not_ready(alias)) is not None:
            same = same + 1 if gap.kind == said else 0
            if same % polls_a_reminder == 0:
                waited = f" (still, after {same * poll:.0f} s)" if same else ""
                log.warning("waiting for the database%s: %s", waited, gap.reason)
            said = gap.kind
            connections[alias].close()  # a connection per poll, none kept while waiting
            sleep(poll)
    finally:
        connections[alias].close()
    if said is not None:
        log.info("the database is ready: every migration is applied")


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
