"""PostgreSQL's record of one model call as it ends
(:meth:`runs.execution.store.RunStore.record_call`; :mod:`runs.execution.call_ledger` says what a
record is): its usage row priced, the run's token counters and the release of the call's quota
holds, in one statement (data-modifying CTEs) prepared once per connection, whose commit does
not wait for the WAL's flush (``synchronous_commit`` off for that transaction alone:
:mod:`runs.execution.call_ledger` says why that loses nothing a crash would not)."""

from __future__ import annotations

from django.db import connection
from django.utils import timezone

from accounts import prices
from accounts.models import QuotaHold, TenantPrice, UsageRecord
from harness.messages import ModelUsage
from runs.execution.prepared import Prepared
from runs.models import Run

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
-- The commit does not wait for the WAL's flush; the tenant's own price for
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


def record_one_statement(run: Run, call: ModelUsage, key: str, printed: bytes | None,
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
