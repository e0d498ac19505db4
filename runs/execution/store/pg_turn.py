"""PostgreSQL's commit of one turn (:meth:`runs.execution.store.RunStore.commit_turn`):
messages, events, ``state_json`` and the turn counter, atomically, and only while the writer's
epoch still holds the running run at the turn it expects (the claim's fence:
:mod:`runs.execution.fence`). The last turn of a run also ends it, as
:mod:`runs.execution.endings` does. The turn's model calls are not the commit's: each was
recorded as it ended, in its own transaction (:mod:`runs.execution.call_ledger`), since the
provider charged for it whether or not the turn lands.

A turn that does not end the run is one statement (data-modifying CTEs): a single round trip, no
separate BEGIN/COMMIT, the fenced UPDATE taking the row lock and gating the INSERTs (a fenced
turn writes no message or event); the last turn of a run also finishes it in the same
statement. The ORM's store does the same in one transaction (:mod:`runs.execution.store.orm`).
The statements are prepared once per connection (:class:`runs.execution.prepared.Prepared`).

For a tenant with a token quota the commit also reports the period's spend (read in the same
statement; the turn's calls are in it, recorded before), so the worker can stop a run that
crossed the quota at the turn boundary without another round trip.
"""

from __future__ import annotations

import json
from typing import Any

from django.db import connection
from django.utils import timezone

from accounts.models import QuotaHold, UsageRecord
from runs.execution import webhooked
from runs.execution.events import EVENT_STATUS
from runs.execution.prepared import Prepared
from runs.execution.turn_write import Committed, TurnWrite
from runs.live import relay
from runs.models import PARKED_RUN_STATUSES, Message, Run, RunEvent, RunStatus
from webhooks import tasks as webhook_tasks

# With a quota, the same statement also releases the run's holds (one more CTE): a call
# that failed without an answer spent nothing its record released.
_RELEASE_HOLDS = f"""
), released AS (
    DELETE FROM {QuotaHold._meta.db_table} WHERE run_id IN (SELECT id FROM advanced)"""

# The last turn also finishes the run, as finish_run does: its status and error, the lease given
# up, a cancel asked for answered (a pause keeps it asked), finished unless paused; the status
# event comes last among the turn's events, and the run's holds are released.
_FINISH = """,
        status = %(finish)s, error = %(error)s, finished_at = %(finished_at)s,
        lease_owner = '', cancel_requested = cancel_requested AND %(keep_cancel)s,
        action_expires_at = %(action_expires)s"""

_ONE_STATEMENT = f"""
WITH advanced AS (
    UPDATE {Run._meta.db_table} SET
        turn = %(turn)s, state_json = %(state)s, lease_expires_at = %(lease)s,
        updated_at = %(now)s, event_seq = event_seq + %(event_count)s{{finish}}
    WHERE id = %(run)s AND epoch = %(epoch)s AND turn = %(expected_turn)s
        AND status = %(running)s
    RETURNING id, session_id, event_seq, cancel_requested, input_tokens, output_tokens,
        cache_read_tokens, cache_write_tokens, webhook_id
), new_messages AS (
    INSERT INTO {Message._meta.db_table} (id, session_id, seq, role, content, content_tokens,
        tokens_counter, run_id, created_at)
    SELECT m.id, advanced.session_id, m.seq, m.role, m.content, m.tokens, m.counter,
        advanced.id, %(now)s
    FROM advanced, jsonb_to_recordset(%(messages)s)
        AS m(id uuid, seq integer, role text, content jsonb, tokens integer, counter text)
), new_events AS (
    INSERT INTO {RunEvent._meta.db_table} (run_id, seq, type, data, created_at)
    SELECT advanced.id, advanced.event_seq - %(event_count)s + e.n, e.type, e.data, %(now)s
    FROM advanced, jsonb_to_recordset(%(events)s) AS e(n integer, type text, data jsonb)
{{release}}
)
SELECT cancel_requested, event_seq,
    CASE WHEN %(quota)s::bigint IS NULL THEN NULL ELSE (
        SELECT coalesce(sum(r.input_tokens + r.output_tokens + r.cache_read_tokens
                            + r.cache_write_tokens), 0)
        FROM {UsageRecord._meta.db_table} r
        WHERE r.tenant_id = %(tenant)s AND r.created_at >= %(period_start)s
    ) END{{webhooked}}
FROM advanced
"""
_STATEMENTS = {False: _ONE_STATEMENT.format(release="", finish="", webhooked=""),
               True: _ONE_STATEMENT.format(release=_RELEASE_HOLDS, finish="", webhooked="")}

# The statement's parameters in the order PREPARE numbers them, with their types. A JSON one
# is bound as its text (``json.dumps``, quoted as psycopg2's ``Json`` quotes it, without that
# adapter's Python calls); the type declared here makes it json or jsonb.
_PARAMETERS = (
    ("run", "uuid"), ("epoch", "bigint"), ("expected_turn", "integer"), ("running", "text"),
    ("turn", "integer"), ("state", "json"), ("lease", "timestamptz"), ("now", "timestamptz"),
    ("event_count", "integer"), ("messages", "jsonb"), ("events", "jsonb"), ("tenant", "uuid"),
    ("agent", "uuid"), ("quota", "bigint"), ("period_start", "timestamptz"),
)


_TURN = {quota: Prepared.of(name, _STATEMENTS[quota], _PARAMETERS)
         for quota, name in ((False, "hango_turn"), (True, "hango_turn_release"))}
# ... and makes the deliveries of its end to the tenant's webhooks (runs/execution/webhooked.py).
_LAST_TURN = Prepared.of(
    "hango_last_turn", _ONE_STATEMENT.format(
        release=_RELEASE_HOLDS + webhooked.DELIVERIES_CTE, finish=_FINISH,
        webhooked=", (SELECT array_agg(id) FROM webhooked)"),
    (*_PARAMETERS, ("finish", "text"), ("error", "jsonb"), ("finished_at", "timestamptz"),
     ("keep_cancel", "boolean"), ("action_expires", "timestamptz")))


def commit_one_statement(write: TurnWrite) -> Committed | None:
    """Commit the turn in one statement; None when the writer was fenced out."""
    now = timezone.now()
    events, finish = write.events, {}
    if write.finish is not None:  # what finish_run does to the locked run, in the statement
        status, error = write.finish
        paused = status in PARKED_RUN_STATUSES
        data: dict[str, Any] = {"status": status, "turn": write.turn}
        if error:
            data["error"] = error
        events = [*events, (EVENT_STATUS, data)]
        finish = {"finish": status, "error": None if error is None else json.dumps(error),
                  "finished_at": None if paused else now, "keep_cancel": paused,
                  "action_expires": write.action_expires_at}
    params = {
        "run": write.run_id, "epoch": write.epoch, "expected_turn": write.expected_turn,
        "running": RunStatus.RUNNING,
        "turn": write.turn, "state": json.dumps(write.state_json), "now": now,
        "lease": None if write.finish is not None else write.lease_expires_at,
        "event_count": len(events),
        "messages": json.dumps([{"id": str(m.id), "seq": m.seq, "role": m.role,
                                 "content": m.content, "tokens": m.tokens, "counter": m.counter}
                                for m in write.messages]),
        "events": json.dumps([{"n": n, "type": t, "data": d}
                              for n, (t, d) in enumerate(events, start=1)]),
        "tenant": write.tenant_id, "agent": write.agent_id,
        "quota": write.quota, "period_start": write.period_start, **finish,
    }
    statement = _LAST_TURN if finish else _TURN[write.quota is not None]
    with connection.cursor() as cursor:  # autocommit: the statement is its own transaction
        statement.run(cursor, params)
        row = cursor.fetchone()
    if row is None:
        return None
    relay.events_added(write.run_id, turn=write.turn, seq=row[1])
    for delivery in (row[3] or []) if finish else ():  # committed: they may go now
        webhook_tasks.send(delivery)
    used = None if row[2] is None else int(row[2])
    return Committed(cancel_requested=bool(row[0]), quota_used=used)
