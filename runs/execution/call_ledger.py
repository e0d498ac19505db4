"""Each model call of a run recorded the moment it ends (:class:`DbLedger`, the run's
:class:`harness.ledger.Ledger`): its usage row, the run's token counters and the release of the
call's quota hold, in one short transaction of its own, before the turn that made the call
commits. A provider charges for a call whether or not its turn lands, so a call whose turn
never does — its worker fenced out by a take-over, the run cancelled mid-call, the worker dead
between the answer and the commit — is still charged, once, against its run; the turn's commit
writes no usage (:mod:`runs.execution.store.pg_turn`).

A row's key names its call: ``<run>/<epoch>:<turn>:<index>``, the claim that made it, the turn,
and its place among that turn's calls. A turn redone by the next claim makes new calls, which
the provider charges again: rows of their own, under the new epoch. The loop tells each call
once, so a key is written once; the write is not retried (a database that fails it fails the
slice, as a turn's commit would).

Spend moves from held to used at once: the hold of the call (every hold the claim took since
its last record: a run's calls are made one after another) is deleted in the same transaction
as its row is written, so the quota's reads (:func:`accounts.usage.committed_spend`) see the
call's worst case or its usage, never both and never neither.

On PostgreSQL it is one statement (data-modifying CTEs), prepared once per connection; the ORM
path does the same in one transaction, for SQLite. The statement's commit does not wait for its
WAL to reach the disk (``synchronous_commit`` off for that transaction alone): a worker that dies
after it loses nothing, the turn's commit after it (synchronous) flushes it with its own, and
only a crash of PostgreSQL itself in the fraction of a second between them could lose the row —
along with the turn, which the next claim redoes. Waiting for a flush per call doubled what a
turn cost a loaded machine (``docs/architecture.md``, *Each call recorded as it ends*).
"""

from __future__ import annotations

import uuid

from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from accounts import prices
from accounts.models import QuotaHold, TenantPrice, UsageRecord
from hango_project.database import database
from harness import fingerprint
from harness.messages import ModelUsage, RequestPrint
from runs.execution.prepared import Prepared
from runs.models import Run


def call_key(run_id: uuid.UUID, epoch: int, turn: int, index: int) -> str:
    """The usage row's key of a call (see the module's docstring)."""
    return f"{run_id}/{epoch}:{turn}:{index}"


def key_parts(key: str) -> tuple[int, int, int]:
    """(epoch, turn, index) of a run's call key; a key written before calls carried their
    claim's epoch (``<run>:<turn>:<index>``) reads as epoch 0."""
    head, turn, index = key.rsplit(":", 2)
    _, _, epoch = head.partition("/")
    return int(epoch or 0), int(turn), int(index)


class DbLedger:
    """The ledger of one claim of a run: each call's row as it ends."""

    def __init__(self, run: Run, *, holds: list[int] | None = None) -> None:
        self.run = run  # as claimed: its epoch names the calls of this claim
        # The quota holds this claim's calls took that no record has released yet (its
        # runs.execution.assembly.DbBudget's ``held``), or None: the tenant has no quota.
        self.holds = holds
        self._turn, self._index = 0, 0
        # The print of this claim's last run call: the next is stored as its edit (the first of
        # a claim is stored whole, so a claim's prints read back on their own).
        self._last_print: RequestPrint | None = None
        self._write = _record_one_statement if database().one_statement else _record_orm

    def record(self, call: ModelUsage, *, turn: int) -> None:
        if turn != self._turn:
            self._turn, self._index = turn, 0
        key = call_key(self.run.pk, self.run.epoch, turn, self._index)
        self._index += 1
        printed = None
        if call.sent is not None:
            printed = fingerprint.encode(call.sent, self._last_print)
            self._last_print = call.sent
        holds = self.holds if self.holds is not None else []
        self._write(self.run, call, key, printed, holds)
        del holds[:]  # released with the row


_RECORD = f"""
WITH released AS (
    DELETE FROM {QuotaHold._meta.db_table} WHERE id = ANY(%(holds)s)
), counted AS (
    UPDATE {Run._meta.db_table} SET
        input_tokens = input_tokens + %(input_tokens)s,
        output_tokens = output_tokens + %(output_tokens)s,
        cache_read_tokens = cache_read_tokens + %(cache_read_tokens)s,
        cache_write_tokens = cache_write_tokens + %(cache_write_tokens)s
    WHERE id = %(run)s
)
INSERT INTO {UsageRecord._meta.db_table} (tenant_id, session_id, run_id, agent_id, purpose,
    provider, model, usage_source, input_tokens, output_tokens, cache_read_tokens,
    cache_write_tokens, dedupe_key, request_print, created_at, price_currency, price_input,
    price_cache_write, price_cache_read, price_output, price_source, unpriced_reason)
SELECT %(tenant)s, %(session)s, %(run)s, %(agent)s, %(purpose)s, %(provider)s, %(model)s,
    %(source)s, %(input_tokens)s, %(output_tokens)s, %(cache_read_tokens)s,
    %(cache_write_tokens)s, %(key)s, %(print)s, %(now)s,
    coalesce(p.currency, %(price_currency)s), coalesce(p.input, %(price_input)s),
    coalesce(p.cache_write, %(price_cache_write)s),
    coalesce(p.cache_read, %(price_cache_read)s), coalesce(p.output, %(price_output)s),
    CASE WHEN p.id IS NULL THEN %(price_source)s ELSE '{prices.TENANT_SOURCE}' END,
    CASE WHEN p.id IS NULL THEN %(unpriced_reason)s ELSE '' END
-- The commit does not wait for the WAL's flush (see ASYNC_COMMIT); the tenant's own price for
-- the model, if it has one, replaces the table's.
FROM (SELECT set_config('synchronous_commit', 'off', true)) AS async_commit
    LEFT JOIN {TenantPrice._meta.db_table} p ON p.tenant_id = %(tenant)s
    AND p.provider = %(provider)s AND p.model = %(model)s
"""

_STATEMENT = Prepared.of("hango_call", _RECORD, (
    ("holds", "bigint[]"), ("input_tokens", "bigint"), ("output_tokens", "bigint"),
    ("cache_read_tokens", "bigint"), ("cache_write_tokens", "bigint"), ("run", "uuid"),
    ("tenant", "uuid"), ("session", "uuid"), ("agent", "uuid"), ("purpose", "text"),
    ("provider", "text"), ("model", "text"), ("source", "text"), ("key", "text"),
    ("print", "bytea"), ("now", "timestamptz"), ("price_currency", "text"),
    ("price_input", "numeric"), ("price_cache_write", "numeric"),
    ("price_cache_read", "numeric"), ("price_output", "numeric"), ("price_source", "text"),
    ("unpriced_reason", "text"),
))


def _record_one_statement(run: Run, call: ModelUsage, key: str, printed: bytes | None,
                          holds: list[int]) -> None:
    usage = call.usage
    params = {
        "holds": "{" + ",".join(str(hold) for hold in holds) + "}",
        "input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
        "cache_read_tokens": usage.cache_read_tokens,
        "cache_write_tokens": usage.cache_write_tokens, "run": run.pk,
        "tenant": run.session.tenant_id, "session": run.session_id, "agent": run.agent_id,
        "purpose": call.purpose, "provider": call.provider, "model": call.model,
        "source": call.source, "key": key, "print": printed, "now": timezone.now(),
        **prices.stored(prices.table_price(call.provider, call.model,
                                           whole_input=prices.whole_input(usage))),
    }
    with connection.cursor() as cursor:  # autocommit: the statement is its own transaction
        _STATEMENT.run(cursor, params)


def _record_orm(run: Run, call: ModelUsage, key: str, printed: bytes | None,
                holds: list[int]) -> None:
    usage = call.usage
    with transaction.atomic():
        UsageRecord.objects.create(
            tenant_id=run.session.tenant_id, session_id=run.session_id, run_id=run.pk,
            agent_id=run.agent_id, purpose=call.purpose, provider=call.provider,
            model=call.model, usage_source=call.source, input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens, cache_read_tokens=usage.cache_read_tokens,
            cache_write_tokens=usage.cache_write_tokens, dedupe_key=key, request_print=printed,
            **prices.columns_for(run.session.tenant_id, call.provider, call.model, usage))
        Run.objects.filter(pk=run.pk).update(
            input_tokens=F("input_tokens") + usage.input_tokens,
            output_tokens=F("output_tokens") + usage.output_tokens,
            cache_read_tokens=F("cache_read_tokens") + usage.cache_read_tokens,
            cache_write_tokens=F("cache_write_tokens") + usage.cache_write_tokens)
        if holds:
            QuotaHold.objects.filter(pk__in=holds).delete()
