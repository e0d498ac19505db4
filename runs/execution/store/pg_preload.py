"""PostgreSQL's preload (:meth:`runs.execution.store.RunStore.preload`;
:mod:`runs.execution.preload` says what it reads and why): the session's history, the overrides, the
agent's memory and the session's file listing — and for the inspector the session's active run and
queue — in one query under the memory read's timeout, from one snapshot."""

from __future__ import annotations

import logging
import uuid
from typing import Any

from django.db import DatabaseError, connection

from agents.models import MemoryFile
from context.models import ContextOverride
from hango_project.config import hango
from hango_project.sql import fetch, uuid_param
from runs.execution.preload import NOTHING_PRELOADED, Preloaded, SessionState
from runs.models import ACTIVE_RUN_STATUSES, Message, PendingMessage, Run, SessionFile

log = logging.getLogger(__name__)


def preload_one_statement(tenant_id: uuid.UUID, agent_id: uuid.UUID, session_id: uuid.UUID, *,
            counts_key: str | None = None, session_state: bool = False) -> Preloaded:
    """The four reads of a run of ``agent_id`` in ``session_id`` (each message with its count
    stored under ``counts_key``, where one is), and with ``session_state`` the session's active
    run and queue, all in one snapshot (a turn committed meanwhile is in all or none of them);
    nothing inside a caller's transaction (which the timeout would outlive) or where the
    statement failed."""
    if connection.in_atomic_block:  # the timeout would outlive the statement
        return NOTHING_PRELOADED
    timeout = f"{max(1, round(hango().context_load_timeout * 1000))}ms"
    session, agent = uuid_param(session_id), uuid_param(agent_id)
    try:
        # Two statements in one query string run as one implicit transaction: the timeout set
        # for it ends with it. The cursor returns the last statement's rows.
        params = [timeout, counts_key, session, uuid_param(tenant_id), agent, session, agent,
                  session]
        if session_state:
            rows = fetch(_PRELOAD_WITH_SESSION, [*params, session, *ACTIVE_RUN_STATUSES, session])
        else:
            rows = fetch(_PRELOAD, params)
    except DatabaseError:  # outside a transaction: nothing to roll back
        log.info("a run's preload failed; its stores read one by one", exc_info=True)
        return NOTHING_PRELOADED
    return _sorted(rows, session_state=session_state)


def _sorted(rows: list[tuple[Any, ...]], *, session_state: bool) -> Preloaded:
    parts: dict[int, list[Any]] = {kind: [] for kind in range(_KINDS)}
    for kind, number, a, b, c in rows:
        parts[kind].append((number, a, b, None if c is None else int(c)) if kind == _HISTORY
                           else (a, b, c) if kind == _OVERRIDES
                           else (a, b) if kind == _MEMORY
                           else (a, number) if kind == _FILES
                           else _run(number, a, b, c) if kind == _RUN
                           else (uuid.UUID(a), b))
    runs = parts[_RUN]
    return Preloaded(history=parts[_HISTORY], overrides=parts[_OVERRIDES],
                     memory=parts[_MEMORY], files=parts[_FILES],
                     session=SessionState(run=runs[0] if runs else None, queued=parts[_QUEUED])
                     if session_state else None)


def _run(turn: int, status: str, state: str, key: str) -> tuple[uuid.UUID, str, int, str,
                                                                  int | None]:
    run_id, _, version = key.partition(" ")  # "<id> <agent version>", the version maybe none
    return uuid.UUID(run_id), status, turn, state, int(version) if version else None


_HISTORY, _OVERRIDES, _MEMORY, _FILES, _RUN, _QUEUED = range(_KINDS := 6)

# Each branch's rows carry their kind and their order: the history by seq, the overrides as the
# store orders them (created_at, part), memory and files by path. ``number`` is a message's seq
# or a file's size; a message's ``c`` its stored count, when it was counted as the run counts.
_BRANCHES = f"""
SELECT set_config('statement_timeout', %s, true);
SELECT kind, number, a, b, c FROM (
    SELECT {_HISTORY} AS kind, seq::bigint AS number, role AS a, content::text AS b,
        CASE WHEN tokens_counter = %s THEN content_tokens::text END AS c,
        seq::bigint AS position
    FROM {Message._meta.db_table} WHERE session_id = %s
  UNION ALL
    SELECT {_OVERRIDES}, NULL, part, action, replacement,
        row_number() OVER (ORDER BY created_at, part)
    FROM {ContextOverride._meta.db_table}
    WHERE tenant_id = %s AND (agent_id = %s OR session_id = %s)
  UNION ALL
    SELECT {_MEMORY}, NULL, path, content, NULL, row_number() OVER (ORDER BY path)
    FROM {MemoryFile._meta.db_table} WHERE agent_id = %s
  UNION ALL
    SELECT {_FILES}, OCTET_LENGTH(content), path, NULL, NULL, row_number() OVER (ORDER BY path)
    FROM {SessionFile._meta.db_table} WHERE session_id = %s{{session}}
) AS reads
ORDER BY kind, position
"""
_PRELOAD = _BRANCHES.format(session="")
# The inspector's: the active run (at most one: a constraint) and the queue behind it too.
_PRELOAD_WITH_SESSION = _BRANCHES.format(session=f"""
  UNION ALL
    SELECT {_RUN}, turn::bigint, status, state_json::text, CONCAT(id, ' ', agent_version), 0
    FROM {Run._meta.db_table}
    WHERE session_id = %s AND status IN ({", ".join(["%s"] * len(ACTIVE_RUN_STATUSES))})
  UNION ALL
    SELECT {_QUEUED}, NULL, message_id::text, content::text, NULL, position
    FROM {PendingMessage._meta.db_table} WHERE session_id = %s""")
