"""The claim of a run nobody holds, in one statement (PostgreSQL): the common case of
:func:`runs.execution.worker.claim_run`, whose ORM path decides every other one."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from django.db import connection

from accounts.models import QuotaHold, Tenant
from agents.models import Agent
from hango_project import metrics
from runs.execution.events import EVENT_LEASE_TAKEN_OVER, EVENT_STATUS, TAKEN_BY_CLAIM
from runs.execution.prepared import Prepared
from runs.live import relay
from runs.models import Run, RunEvent, RunStatus, Session

# The claim of a run nobody holds, in one statement: lock it, take its lease under a new epoch
# (a queued run starts running, with its status event; a lease that expired under another
# worker is taken over, with its event), release what an earlier claim's calls held, and read
# the run with its agent, session and tenant. Only the common case: a run whose
# cancel was asked for, or that has an error (its status event would carry it), is not
# claimed here, nor one another worker holds; the caller's ORM path decides those.
_CLAIM_SQL = """
WITH locked AS (
    SELECT r.id, r.status AS was, t.token_quota IS NOT NULL AS quota,
        r.lease_owner AS holder, r.epoch AS held_epoch, r.lease_expires_at AS held_until,
        coalesce(r.lease_owner NOT IN ('', %(owner)s) AND r.lease_expires_at <= %(now)s,
                 false) AS taken
    FROM {runs} r JOIN {sessions} s ON s.id = r.session_id JOIN {tenants} t ON t.id = s.tenant_id
    WHERE r.id = %(run)s AND r.status IN (%(queued)s, %(running)s) AND NOT r.cancel_requested
        AND r.error IS NULL AND (r.lease_expires_at IS NULL OR r.lease_expires_at <= %(now)s
                                 OR r.lease_owner = %(owner)s)
    FOR UPDATE OF r
), claimed AS (
    UPDATE {runs} r SET epoch = r.epoch + 1, lease_owner = %(owner)s,
        lease_expires_at = %(lease)s, status = %(running)s, updated_at = %(now)s,
        started_at = CASE WHEN locked.was = %(queued)s THEN coalesce(r.started_at, %(now)s)
                          ELSE r.started_at END,
        event_seq = r.event_seq + (locked.was = %(queued)s)::integer + locked.taken::integer
    FROM locked WHERE r.id = locked.id
    RETURNING r.*, locked.was, locked.quota, locked.holder, locked.held_epoch,
        locked.held_until, locked.taken
), status_event AS (
    INSERT INTO {events} (run_id, seq, type, data, created_at)
    SELECT id, event_seq - taken::integer, %(event)s,
        jsonb_build_object('status', status, 'turn', turn), %(now)s
    FROM claimed WHERE was = %(queued)s
), takeover_event AS (  -- its time as runs.execution.events.timestamp writes it
    INSERT INTO {events} (run_id, seq, type, data, created_at)
    SELECT id, event_seq, %(takeover)s, jsonb_build_object(
        'from_worker', holder, 'from_epoch', held_epoch, 'to_worker', lease_owner,
        'epoch', epoch, 'lease_expired_at', to_char(at, 'YYYY-MM-DD"T"HH24:MI:SS')
            || CASE WHEN date_trunc('second', at) = at THEN '' ELSE to_char(at, '.US') END
            || 'Z', 'by', 'claim'), %(now)s
    FROM (SELECT *, held_until AT TIME ZONE 'UTC' AS at FROM claimed) taken_over WHERE taken
), released AS (
    DELETE FROM {holds} WHERE run_id IN (SELECT id FROM claimed WHERE quota)
)
SELECT {columns}, claimed.taken
FROM claimed JOIN {agents} a ON a.id = claimed.agent_id
    JOIN {sessions} s ON s.id = claimed.session_id JOIN {tenants} t ON t.id = s.tenant_id
"""
_CLAIMED = ((Run, "claimed"), (Agent, "a"), (Session, "s"), (Tenant, "t"))
_CLAIM = Prepared.of("hango_claim", _CLAIM_SQL.format(
    runs=Run._meta.db_table, sessions=Session._meta.db_table, tenants=Tenant._meta.db_table,
    agents=Agent._meta.db_table, events=RunEvent._meta.db_table,
    holds=QuotaHold._meta.db_table,
    columns=", ".join(f"{alias}.{f.column}" for model, alias in _CLAIMED
                      for f in model._meta.concrete_fields)),
    (("run", "uuid"), ("owner", "text"), ("lease", "timestamptz"), ("now", "timestamptz"),
     ("queued", "text"), ("running", "text"), ("event", "text"), ("takeover", "text")))


def claim_unheld(run_id: uuid.UUID | str, owner: str, lease_expires_at: datetime,
                 now: datetime) -> Run | None:
    """On PostgreSQL, claim a queued or running run no live lease holds (or ``owner``'s) in one
    statement, as :func:`runs.execution.worker.claim_run` would; the run, with its agent, session
    and tenant, or None when it is not that common case."""
    try:
        run_id = uuid.UUID(str(run_id))
    except ValueError:
        return None
    params = {"run": run_id, "owner": owner, "lease": lease_expires_at, "now": now,
              "queued": RunStatus.QUEUED, "running": RunStatus.RUNNING, "event": EVENT_STATUS,
              "takeover": EVENT_LEASE_TAKEN_OVER}
    with connection.cursor() as cursor:
        _CLAIM.run(cursor, params)
        row = cursor.fetchone()
    if row is None:
        return None
    values = iter(row)
    run, agent, session, tenant = (_loaded(model, values) for model, _ in _CLAIMED)
    if next(values):  # the lease had expired under another worker
        metrics.lease_taken_over(TAKEN_BY_CLAIM)
    # A queued run's status event, a take-over's (a later slice's claim writes none: the seq is
    # not new).
    relay.events_added(run.pk, turn=run.turn, seq=run.event_seq)
    session.tenant = tenant
    run.agent, run.session = agent, session
    return run


def _loaded(model: type[Any], values: Any) -> Any:
    """The model instance of the next columns of a row, as a queryset would make it."""
    fields = model._meta.concrete_fields
    row = []
    for f, value in zip(fields, values, strict=False):  # values: the whole row, consumed
        if hasattr(f, "from_db_value"):  # JSON columns arrive as text
            value = f.from_db_value(value, None, connection)
        row.append(value)
    return model.from_db(connection.alias, [f.attname for f in fields], row)
