"""Committing one turn: messages, events, usage counters and ``usage_records`` rows (one per
model call, keyed ``<run>:<turn>:<index>``), ``state_json`` and the turn counter, atomically,
and only while the writer's epoch still holds the running run at the turn it expects; and the
fence the same claim puts around its tools' writes (:class:`Claim`, :func:`take_over`).

On PostgreSQL a turn that does not end the run is one statement (data-modifying CTEs): a single
round trip, no separate BEGIN/COMMIT, the fenced UPDATE taking the row lock and gating the
INSERTs (a fenced turn writes no message, event or usage row); the last turn of a run also
finishes it in the same statement. The ORM path does the same in one transaction, for SQLite.
The claim of a run nobody holds is one statement too (:func:`claim_unheld`). They are prepared
once per connection (:class:`_Prepared`).

For a tenant with a token quota the commit also reports the period's spend (read in the same
statement, plus this turn's tokens), so the worker can stop a run that crossed the quota at the
turn boundary without another round trip.
"""

from __future__ import annotations

import os
import re
import time
import uuid
import weakref
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import DatabaseError, connection, transaction
from django.utils import timezone
from psycopg2.errors import InvalidSqlStatementName
from psycopg2.extras import Json

from accounts.models import QuotaHold, Tenant, UsageRecord
from accounts.usage import quota_release, tenant_spend
from agents.models import Agent
from harness import approvals
from harness.errors import Superseded
from harness.messages import ModelUsage, Role, ToolUseBlock, Usage
from harness.serde import content_from_json, content_to_json
from runs.events import EVENT_MESSAGE, EVENT_STATUS, append_events, status_event
from runs.models import Message, Run, RunEvent, RunStatus, Session

Event = tuple[str, dict[str, Any]]
INTERNAL_ERROR = "internal_error"  # a run's error code when its worker crashed: resumable


@dataclass(frozen=True)
class Claim:
    """A worker's hold on a run: the epoch it claimed the run under. It holds while the run is
    running under that epoch; whoever changes the run from outside the holder (a cancel, a
    resume, an approval, the reconciler, another claim) advances the epoch (:func:`take_over`),
    so every later write of this claim is refused."""

    run_id: uuid.UUID
    epoch: int

    def hold(self) -> None:
        """In the caller's transaction: lock the run's row while this claim still holds it (a
        concurrent take-over waits for the caller's commit), or raise
        :class:`~harness.errors.Superseded`. A tool's write to hango's stores runs under it."""
        held = (Run.objects.select_for_update(no_key=True)
                .filter(pk=self.run_id, epoch=self.epoch, status=RunStatus.RUNNING)
                .values_list("pk", flat=True))
        if not held:
            raise Superseded(f"run {self.run_id} is no longer held under epoch {self.epoch}")


def message_id() -> uuid.UUID:
    """A new stored message's id: a version-7 UUID (RFC 9562; ``uuid.uuid7`` from Python 3.14),
    48 bits of Unix milliseconds and then random bits. Ids made later sort later, so each turn's
    rows land on the last page of the ``messages`` primary key, where random ones would dirty
    (and after each checkpoint log whole) a page anywhere in it."""
    value = (time.time_ns() // 1_000_000) << 80 | int.from_bytes(os.urandom(10))
    value = value & ~(0xF << 76) | 0x7 << 76  # the version
    return uuid.UUID(int=value & ~(0x3 << 62) | 0x2 << 62)  # the RFC 4122 variant


def take_over(run: Run) -> None:
    """Fence out whoever holds a locked run (the caller saves it): its epoch advances and its
    lease is cleared, so a stalled holder's next commit, store write or event is refused."""
    run.epoch += 1
    run.lease_owner, run.lease_expires_at = "", None


@dataclass(frozen=True, kw_only=True)
class TurnWrite:
    run_id: uuid.UUID
    session_id: uuid.UUID
    epoch: int
    expected_turn: int  # the run's turn before this one; anything else means a duplicate
    turn: int
    state_json: dict[str, Any]
    lease_expires_at: datetime
    messages: list[tuple[uuid.UUID, int, Role, list[dict[str, Any]]]]  # id, seq, role, content
    events: list[Event]  # in order; message events included
    usage: Usage
    finish: tuple[str, dict[str, Any] | None] | None = None  # (status, error) on the last turn
    # usage_records: one row per model call of the turn, with the run's tenancy.
    tenant_id: uuid.UUID | None = None
    agent_id: uuid.UUID | None = None
    calls: list[ModelUsage] = field(default_factory=list)
    # The tenant's quota and the start of its current period: report the period's spend.
    quota: int | None = None
    period_start: datetime | None = None


@dataclass(frozen=True, kw_only=True)
class Committed:
    cancel_requested: bool
    quota_used: int | None = None  # the period's spend including this turn (quota set only)


def _usage_rows(write: TurnWrite) -> list[dict[str, Any]]:
    return [{"key": f"{write.run_id}:{write.turn}:{index}", "purpose": call.purpose,
             "provider": call.provider, "model": call.model,
             "input_tokens": call.usage.input_tokens, "output_tokens": call.usage.output_tokens,
             "cache_read_tokens": call.usage.cache_read_tokens,
             "cache_write_tokens": call.usage.cache_write_tokens}
            for index, call in enumerate(write.calls)] if write.tenant_id is not None else []


def commit_turn(write: TurnWrite) -> Committed | None:
    """Commit the turn; None when the writer was fenced out (nothing was written)."""
    if connection.vendor == "postgresql":
        return _commit_one_statement(write)
    return _commit_orm(write)


# With a quota, the same statement also releases the run's holds (one more CTE): the calls'
# worst cases stop counting in the transaction that writes what they spent.
_RELEASE_HOLDS = f"""
), released AS (
    DELETE FROM {QuotaHold._meta.db_table} WHERE run_id IN (SELECT id FROM advanced)"""

# The last turn also finishes the run, as finish_run does: its status and error, the lease given
# up, a cancel asked for answered (a pause keeps it asked), finished unless paused; the status
# event comes last among the turn's events, and the run's holds are released.
_FINISH = """,
        status = %(finish)s, error = %(error)s, finished_at = %(finished_at)s,
        lease_owner = '', cancel_requested = cancel_requested AND %(keep_cancel)s"""

_ONE_STATEMENT = f"""
WITH advanced AS (
    UPDATE {Run._meta.db_table} SET
        turn = %(turn)s, state_json = %(state)s, lease_expires_at = %(lease)s,
        updated_at = %(now)s, event_seq = event_seq + %(event_count)s,
        input_tokens = input_tokens + %(input_tokens)s,
        output_tokens = output_tokens + %(output_tokens)s,
        cache_read_tokens = cache_read_tokens + %(cache_read_tokens)s,
        cache_write_tokens = cache_write_tokens + %(cache_write_tokens)s{{finish}}
    WHERE id = %(run)s AND epoch = %(epoch)s AND turn = %(expected_turn)s
        AND status = %(running)s
    RETURNING id, session_id, event_seq, cancel_requested
), new_messages AS (
    INSERT INTO {Message._meta.db_table} (id, session_id, seq, role, content, run_id, created_at)
    SELECT m.id, advanced.session_id, m.seq, m.role, m.content, advanced.id, %(now)s
    FROM advanced, jsonb_to_recordset(%(messages)s)
        AS m(id uuid, seq integer, role text, content jsonb)
), new_events AS (
    INSERT INTO {RunEvent._meta.db_table} (run_id, seq, type, data, created_at)
    SELECT advanced.id, advanced.event_seq - %(event_count)s + e.n, e.type, e.data, %(now)s
    FROM advanced, jsonb_to_recordset(%(events)s) AS e(n integer, type text, data jsonb)
), new_usage AS (
    INSERT INTO {UsageRecord._meta.db_table} (tenant_id, session_id, run_id, agent_id, purpose,
        provider, model, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,
        dedupe_key, created_at)
    SELECT %(tenant)s, advanced.session_id, advanced.id, %(agent)s, u.purpose, u.provider,
        u.model, u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens,
        u.key, %(now)s
    FROM advanced, jsonb_to_recordset(%(usage)s) AS u(key text, purpose text, provider text,
        model text, input_tokens bigint, output_tokens bigint, cache_read_tokens bigint,
        cache_write_tokens bigint){{release}}
)
SELECT cancel_requested,
    CASE WHEN %(quota)s::bigint IS NULL THEN NULL ELSE (
        SELECT coalesce(sum(r.input_tokens + r.output_tokens + r.cache_read_tokens
                            + r.cache_write_tokens), 0)
        FROM {UsageRecord._meta.db_table} r
        WHERE r.tenant_id = %(tenant)s AND r.created_at >= %(period_start)s
    ) END
FROM advanced
"""
_STATEMENTS = {False: _ONE_STATEMENT.format(release="", finish=""),
               True: _ONE_STATEMENT.format(release=_RELEASE_HOLDS, finish="")}

# The statement's parameters in the order PREPARE numbers them, with their types.
_PARAMETERS = (
    ("run", "uuid"), ("epoch", "bigint"), ("expected_turn", "integer"), ("running", "text"),
    ("turn", "integer"), ("state", "jsonb"), ("lease", "timestamptz"), ("now", "timestamptz"),
    ("event_count", "integer"), ("input_tokens", "bigint"), ("output_tokens", "bigint"),
    ("cache_read_tokens", "bigint"), ("cache_write_tokens", "bigint"), ("messages", "jsonb"),
    ("events", "jsonb"), ("tenant", "uuid"), ("agent", "uuid"), ("usage", "jsonb"),
    ("quota", "bigint"), ("period_start", "timestamptz"),
)


@dataclass(frozen=True)
class _Prepared:
    """A statement PREPAREd once per connection, then EXECUTEd with positional values: parsing
    and planning the turn's statement took a third of a turn."""

    name: str
    parameters: tuple[tuple[str, str], ...]  # (name, type) in PREPARE's order
    prepare: str
    execute: str

    @classmethod
    def of(cls, name: str, sql: str, parameters: tuple[tuple[str, str], ...]) -> _Prepared:
        """``sql`` with ``%(name)s`` parameters, as PREPARE's ``$n``."""
        position = {key: n for n, (key, _) in enumerate(parameters, start=1)}
        body = re.sub(r"%\((\w+)\)s", lambda m: f"${position[m[1]]}", sql)
        types = ", ".join(kind for _, kind in parameters)
        return cls(name, parameters, f"PREPARE {name} ({types}) AS {body}",
                   f"EXECUTE {name} ({', '.join(['%s'] * len(parameters))})")

    def run(self, cursor: Any, params: dict[str, Any]) -> None:
        """EXECUTE it, preparing it first on a connection that has not. A server that lost it
        (``DEALLOCATE``, ``DISCARD ALL``) gets it prepared again; in autocommit the failed
        EXECUTE changed nothing (in a transaction the error is the caller's)."""
        values = [params[key] for key, _ in self.parameters]
        prepared = _prepared.setdefault(connection.connection, set())
        if self.name not in prepared:
            cursor.execute(self.prepare)
            prepared.add(self.name)
        try:
            cursor.execute(self.execute, values)
        except DatabaseError as exc:
            if (not isinstance(exc.__cause__, InvalidSqlStatementName)
                    or connection.in_atomic_block):
                raise
            cursor.execute(self.prepare)
            cursor.execute(self.execute, values)


# The statements each open DB-API connection has prepared. One lives as long as its server
# session: a connection Django re-opens is a new object, found here with none.
_prepared: weakref.WeakKeyDictionary[Any, set[str]] = weakref.WeakKeyDictionary()
_TURN = {quota: _Prepared.of(name, _STATEMENTS[quota], _PARAMETERS)
         for quota, name in ((False, "hango_turn"), (True, "hango_turn_release"))}
_LAST_TURN = _Prepared.of(
    "hango_last_turn", _ONE_STATEMENT.format(release=_RELEASE_HOLDS, finish=_FINISH),
    (*_PARAMETERS, ("finish", "text"), ("error", "jsonb"), ("finished_at", "timestamptz"),
     ("keep_cancel", "boolean")))


def _commit_one_statement(write: TurnWrite) -> Committed | None:
    now = timezone.now()
    events, finish = write.events, {}
    if write.finish is not None:  # what finish_run does to the locked run, in the statement
        status, error = write.finish
        paused = status == RunStatus.AWAITING_APPROVAL
        data: dict[str, Any] = {"status": status, "turn": write.turn}
        if error:
            data["error"] = error
        events = [*events, (EVENT_STATUS, data)]
        finish = {"finish": status, "error": None if error is None else Json(error),
                  "finished_at": None if paused else now, "keep_cancel": paused}
    params = {
        "run": write.run_id, "epoch": write.epoch, "expected_turn": write.expected_turn,
        "running": RunStatus.RUNNING,
        "turn": write.turn, "state": Json(write.state_json), "now": now,
        "lease": None if write.finish is not None else write.lease_expires_at,
        "event_count": len(events),
        "input_tokens": write.usage.input_tokens, "output_tokens": write.usage.output_tokens,
        "cache_read_tokens": write.usage.cache_read_tokens,
        "cache_write_tokens": write.usage.cache_write_tokens,
        "messages": Json([{"id": str(id_), "seq": seq, "role": role, "content": content}
                          for id_, seq, role, content in write.messages]),
        "events": Json([{"n": n, "type": t, "data": d}
                        for n, (t, d) in enumerate(events, start=1)]),
        "tenant": write.tenant_id, "agent": write.agent_id, "usage": Json(_usage_rows(write)),
        "quota": write.quota, "period_start": write.period_start, **finish,
    }
    statement = _LAST_TURN if finish else _TURN[write.quota is not None]
    with connection.cursor() as cursor:  # autocommit: the statement is its own transaction
        statement.run(cursor, params)
        row = cursor.fetchone()
    if row is None:
        return None
    # The statement's snapshot does not see its own inserts: add this turn's tokens.
    used = None if row[1] is None else int(row[1]) + write.usage.total
    return Committed(cancel_requested=bool(row[0]), quota_used=used)


# The claim of a run nobody holds, in one statement: lock it, take its lease under a new epoch
# (a queued run starts running, with its status event), release what an earlier claim's calls
# held, and read the run with its agent, session and tenant. Only the common case: a run whose
# cancel was asked for, or that has an error (its status event would carry it), is not
# claimed here, nor one another worker holds; the caller's ORM path decides those.
_CLAIM_SQL = """
WITH locked AS (
    SELECT r.id, r.status AS was, t.token_quota IS NOT NULL AS quota
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
        event_seq = r.event_seq + (locked.was = %(queued)s)::integer
    FROM locked WHERE r.id = locked.id
    RETURNING r.*, locked.was, locked.quota
), status_event AS (
    INSERT INTO {events} (run_id, seq, type, data, created_at)
    SELECT id, event_seq, %(event)s, jsonb_build_object('status', status, 'turn', turn), %(now)s
    FROM claimed WHERE was = %(queued)s
), released AS (
    DELETE FROM {holds} WHERE run_id IN (SELECT id FROM claimed WHERE quota)
)
SELECT {columns}
FROM claimed JOIN {agents} a ON a.id = claimed.agent_id
    JOIN {sessions} s ON s.id = claimed.session_id JOIN {tenants} t ON t.id = s.tenant_id
"""
_CLAIMED = ((Run, "claimed"), (Agent, "a"), (Session, "s"), (Tenant, "t"))
_CLAIM = _Prepared.of("hango_claim", _CLAIM_SQL.format(
    runs=Run._meta.db_table, sessions=Session._meta.db_table, tenants=Tenant._meta.db_table,
    agents=Agent._meta.db_table, events=RunEvent._meta.db_table,
    holds=QuotaHold._meta.db_table,
    columns=", ".join(f"{alias}.{f.column}" for model, alias in _CLAIMED
                      for f in model._meta.concrete_fields)),
    (("run", "uuid"), ("owner", "text"), ("lease", "timestamptz"), ("now", "timestamptz"),
     ("queued", "text"), ("running", "text"), ("event", "text")))


def claim_unheld(run_id: uuid.UUID | str, owner: str, lease_expires_at: datetime,
                 now: datetime) -> Run | None:
    """On PostgreSQL, claim a queued or running run no live lease holds (or ``owner``'s) in one
    statement, as :func:`runs.worker.claim_run` would; the run, with its agent, session and
    tenant, or None when it is not that common case."""
    try:
        run_id = uuid.UUID(str(run_id))
    except ValueError:
        return None
    params = {"run": run_id, "owner": owner, "lease": lease_expires_at, "now": now,
              "queued": RunStatus.QUEUED, "running": RunStatus.RUNNING, "event": EVENT_STATUS}
    with connection.cursor() as cursor:
        _CLAIM.run(cursor, params)
        row = cursor.fetchone()
    if row is None:
        return None
    values = iter(row)
    run, agent, session, tenant = (_loaded(model, values) for model, _ in _CLAIMED)
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


def _commit_orm(write: TurnWrite) -> Committed | None:
    with transaction.atomic():
        run = Run.objects.select_for_update().filter(
            pk=write.run_id, epoch=write.epoch, turn=write.expected_turn,
            status=RunStatus.RUNNING).first()
        if run is None:
            return None
        Message.objects.bulk_create([
            Message(id=id_, session_id=write.session_id, seq=seq, role=role, content=content,
                    run=run) for id_, seq, role, content in write.messages])
        run.turn = write.turn
        run.state_json = write.state_json
        run.lease_expires_at = write.lease_expires_at
        run.input_tokens += write.usage.input_tokens
        run.output_tokens += write.usage.output_tokens
        run.cache_read_tokens += write.usage.cache_read_tokens
        run.cache_write_tokens += write.usage.cache_write_tokens
        append_events(run, write.events)
        if write.finish is not None:
            finish_run(run, *write.finish)
        run.save()
        if write.tenant_id is not None:  # a usage row needs a tenant (see _usage_rows)
            UsageRecord.objects.bulk_create([
                UsageRecord(tenant_id=write.tenant_id, session_id=write.session_id,
                            run_id=run.pk, agent_id=write.agent_id, purpose=row["purpose"],
                            provider=row["provider"], model=row["model"],
                            input_tokens=row["input_tokens"],
                            output_tokens=row["output_tokens"],
                            cache_read_tokens=row["cache_read_tokens"],
                            cache_write_tokens=row["cache_write_tokens"], dedupe_key=row["key"])
                for row in _usage_rows(write)])
        used = None
        if write.quota is not None and write.tenant_id is not None:
            quota_release(run_id=run.pk)
            used = tenant_spend(write.tenant_id, write.period_start or timezone.now())
        return Committed(cancel_requested=run.cancel_requested, quota_used=used)


def finish_run(run: Run, status: str, error: dict[str, Any] | None = None) -> None:
    """Mark a locked run finished, with its status event (the caller saves it).

    A pause for approval also ends the worker's hold, but the run is not finished: no
    ``finished_at``, and a cancel asked for meanwhile stays asked (the next claim honours it)."""
    paused = status == RunStatus.AWAITING_APPROVAL
    quota_release(run_id=run.pk)  # a hold of a call that never made it into a turn
    run.status = status
    run.error = error
    run.finished_at = None if paused else timezone.now()
    run.lease_owner, run.lease_expires_at = "", None
    if not paused:
        run.cancel_requested = False
    append_events(run, [status_event(run)])


def cancel_unheld(run: Run) -> None:
    """Cancel a locked run no live worker holds (the caller saves it): a paused batch's calls
    get their results, and a stalled holder is fenced out."""
    close_paused_batch(run)
    take_over(run)
    finish_run(run, RunStatus.CANCELLED)


def close_paused_batch(run: Run) -> None:
    """Answer every call of a locked run's paused tool batch, as the run is cancelled with no
    worker holding it (a worker that sees the cancel closes the batch in its own turn).

    A run paused for approval (or approved but not yet resumed) has stored an assistant message
    whose calls have no results yet. This appends the message :func:`harness.approvals.close`
    makes for them, so the history stays valid for a resume or the session's next run, and takes
    the batch out of the checkpoint. The caller saves ``run``."""
    data = run.state_json or {}
    if data.get("pending_batch") is None:
        return
    batch = approvals.batch_from_json(data["pending_batch"])
    run.state_json = {k: v for k, v in data.items() if k != "pending_batch"}
    last = Message.objects.filter(session_id=run.session_id).order_by("-seq").first()
    if last is None or last.role != "assistant":  # nothing waits for a result
        return
    uses = [b for b in content_from_json(last.content) if isinstance(b, ToolUseBlock)]
    if not uses:
        return
    closing = approvals.close(uses, batch)
    message = Message.objects.create(session_id=run.session_id, seq=last.seq + 1, role="user",
                                     content=content_to_json(closing.content), run=run)
    append_events(run, [(EVENT_MESSAGE, {"id": str(message.id), "seq": message.seq,
                                         "role": message.role})])
