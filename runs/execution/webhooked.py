"""What a run's end tells the tenant's webhooks (:mod:`webhooks`): one delivery per active
endpoint that wants the event — the run's agent's endpoints, and the one it names (its
trigger message's or its schedule's) —
made in the transaction that ends the run, so an end is never committed without them.

Two twins say the same thing: :data:`DELIVERIES_CTE`, a step of the last turn's one statement
(:mod:`runs.execution.store.pg_turn`), and :func:`deliveries_for`, for the ends written through the
ORM (a cancel, a worker's failure, SQLite). The event's ``data`` is the run as it ended: ids,
status, error, turn and token usage.
"""

from __future__ import annotations

import uuid
from typing import Any

from accounts.models import Member
from runs.models import Run, Session
from webhooks import services
from webhooks.models import Delivery, Endpoint

_WHOLE_TENANT_ROLES = ", ".join(f"'{role.value}'" for role in services.WHOLE_TENANT)

# A step of the last turn's statement, after ``advanced`` (the run's row as updated; its status
# is %(finish)s): the deliveries it makes, their ids returned by the statement.
DELIVERIES_CTE = f"""
), webhooked AS (
    INSERT INTO {Delivery._meta.db_table} (id, tenant_id, endpoint_id, event, run_id, data,
        status, attempts, next_attempt_at, last_error, created_at)
    SELECT gen_random_uuid(), e.tenant_id, e.id, 'run.' || %(finish)s, advanced.id,
        jsonb_build_object(
            'run', advanced.id, 'session', advanced.session_id, 'agent', %(agent)s::uuid,
            'status', %(finish)s, 'error', %(error)s::jsonb, 'turn', %(turn)s,
            'usage', jsonb_build_object(
                'input_tokens', advanced.input_tokens, 'output_tokens', advanced.output_tokens,
                'cache_read_tokens', advanced.cache_read_tokens,
                'cache_write_tokens', advanced.cache_write_tokens)),
        'pending', 0, %(now)s, '', %(now)s
    FROM advanced JOIN {Endpoint._meta.db_table} e ON e.active AND e.tenant_id = %(tenant)s
        AND (e.agent_id = %(agent)s OR e.id = advanced.webhook_id)
        AND e.events ? ('run.' || %(finish)s)
        AND (e.member_id = (SELECT s.member_id FROM {Session._meta.db_table} s
                            WHERE s.id = advanced.session_id)
             OR EXISTS (SELECT 1 FROM {Member._meta.db_table} m WHERE m.id = e.member_id
                        AND m.role IN ({_WHOLE_TENANT_ROLES})))
    RETURNING id"""


def data(run: Run) -> dict[str, Any]:
    """The event's ``data``: the run as it ended (what :data:`DELIVERIES_CTE` builds)."""
    return {"run": str(run.pk), "session": str(run.session_id), "agent": str(run.agent_id),
            "status": run.status, "error": run.error, "turn": run.turn,
            "usage": {"input_tokens": run.input_tokens, "output_tokens": run.output_tokens,
                      "cache_read_tokens": run.cache_read_tokens,
                      "cache_write_tokens": run.cache_write_tokens}}


def deliveries_for(run: Run) -> list[uuid.UUID]:
    """In the caller's transaction, the deliveries of ``run``'s end (its status set)."""
    return services.deliveries_for_run(tenant_id=run.session.tenant_id, agent_id=run.agent_id,
                                       event=f"run.{run.status}", run_id=run.pk,
                                       data=data(run), also=run.webhook_id,
                                       session_member_id=run.session.member_id)
