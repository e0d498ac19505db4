"""Each model call recorded as it ends (runs/execution/call_ledger.py), by either path — the one
statement (PostgreSQL) and the ORM transaction (SQLite) — on one of two runs made alike: its usage
row priced as the table or the tenant says, the run's counters, its quota hold released with it,
its key naming the claim, and its request print as the edit of the claim's call before."""

from __future__ import annotations

import time
import uuid
from decimal import Decimal
from typing import Any

import pytest
from django.db import connection

from accounts import prices
from accounts.models import QuotaHold, TenantPrice, UsageRecord
from accounts.usage import committed_spend, quota_hold
from harness import fingerprint
from harness.messages import ModelUsage, PartPrint, RequestPrint, Usage
from runs.execution.call_ledger import DbLedger, key_parts
from runs.execution.store import pg_ledger
from runs.execution.store.orm import OrmStore
from runs.intake.selectors import run_calls
from runs.models import Run
from tests.runs.conftest import EARLIER

ONE_STATEMENT = pytest.mark.postgresql(reason="the one-statement path (PREPAREd, CTEs)")
pytestmark = pytest.mark.django_db(transaction=True)

# A steady turn's request print: ten tools, three system blocks and twenty messages before; the
# todo block rewritten and the last turn's two messages added since (harness.fingerprint).
_BEFORE = RequestPrint(parts=(
    *(PartPrint(f"tool:tool_{i}", 1000 + i, 150) for i in range(10)),
    PartPrint("system:agent", 1, 900), PartPrint("system:filesystem", 2, 40),
    PartPrint("system:todo", 3, 60),
    *(PartPrint(f"message:{seq}", 10 + seq, 200) for seq in range(1, 21))), cached=11)
_NOW = RequestPrint(parts=(
    *_BEFORE.parts[:12], PartPrint("system:todo", 4, 75), *_BEFORE.parts[13:],
    PartPrint("message:21", 31, 180), PartPrint("message:22", 32, 420)), cached=11)
CALLS = [
    # Past 2**31, to catch a narrower integer anywhere on the way.
    ModelUsage(purpose="run", provider="anthropic", model="claude-sonnet-4-5", sent=_BEFORE,
               usage=Usage(input_tokens=1_200, output_tokens=345,
                           cache_read_tokens=3_000_000_000, cache_write_tokens=67)),
    ModelUsage(purpose="summarize", provider="scripted", model="demo", source="counted",
               usage=Usage(input_tokens=5, output_tokens=6, cache_read_tokens=7,
                           cache_write_tokens=8)),
    ModelUsage(purpose="run", provider="openai", model="gpt-unknown", sent=_NOW,
               usage=Usage(input_tokens=9)),
    # A name as long as the column allows: its reason is clipped to the reason's column.
    ModelUsage(purpose="run", provider="openai", model="m" * 200, usage=Usage(input_tokens=1)),
]
TOKENS = sum(call.usage.total for call in CALLS)
PATHS = [pytest.param("_record_one_statement", marks=ONE_STATEMENT), "_record_orm"]

# Each store's record, by the name the tests are parametrised with.
_RECORDS = {"_record_one_statement": pg_ledger.record_one_statement,
            "_record_orm": OrmStore().record_call}


def ledger(run: Run, path: str, holds: list[int] | None = None) -> DbLedger:
    out = DbLedger(run, holds=holds)
    out._write = _RECORDS[path]
    return out


def rows(run: Run) -> list[dict[str, Any]]:
    """The run's usage rows, without ids, times and the run's own ids (placeholders)."""
    own = {run.pk: "<run>", run.session_id: "<session>", run.session.tenant_id: "<tenant>",
           run.agent_id: "<agent>"}
    out = []
    for row in UsageRecord.objects.filter(run_id=run.pk).order_by("id").values():
        row = {k: own.get(v, v) for k, v in row.items() if k not in {"id", "created_at"}}
        row["dedupe_key"] = row["dedupe_key"].replace(str(run.pk), "<run>")
        row["request_print"] = None if row["request_print"] is None else bytes(
            row["request_print"])
        out.append(row)
    return out


@ONE_STATEMENT
def test_both_paths_record_a_call_alike(twin_runs):
    """The table's price, the tenant's own (for a model the table does not price) and none,
    the counters of the run, the keys and the prints: the same by either path."""
    for run in twin_runs:
        TenantPrice.objects.create(
            tenant_id=run.session.tenant_id, provider="scripted", model="demo", currency="EUR",
            input=Decimal("0.5"), cache_write=Decimal("0.6"), cache_read=Decimal("0.05"),
            output=Decimal("2"))
    for run, path in zip(twin_runs, ("_record_one_statement", "_record_orm"), strict=True):
        calls = ledger(run, path)
        for n, call in enumerate(CALLS):
            calls.record(call, turn=1 if n < 2 else 2)
    by_sql = rows(twin_runs[0])
    assert by_sql == rows(twin_runs[1])
    assert [r["dedupe_key"] for r in by_sql] == ["<run>/1:1:0", "<run>/1:1:1", "<run>/1:2:0",
                                                "<run>/1:2:1"]
    assert [r["usage_source"] for r in by_sql] == ["provider", "counted", "provider", "provider"]
    # The claim's first print whole, the next its edit; a call without one has none.
    assert [r["request_print"] for r in by_sql] == [
        fingerprint.encode(_BEFORE, None), None, fingerprint.encode(_NOW, _BEFORE), None]
    table, tenant, unpriced, long_name = by_sql
    sonnet = prices.table_price(  # past its long-context tier
        "anthropic", "claude-sonnet-4-5", whole_input=prices.whole_input(CALLS[0].usage))
    assert isinstance(sonnet, prices.Price)
    assert (table["price_currency"], table["price_source"], table["unpriced_reason"]) == (
        "USD", prices.TABLE_SOURCE, "")
    assert [table[f"price_{name}"] for name in prices.RATES] == [
        sonnet.input, sonnet.cache_write, sonnet.cache_read, sonnet.output]
    assert (tenant["price_currency"], tenant["price_source"], tenant["price_output"]) == (
        "EUR", "tenant", Decimal("2"))
    assert unpriced["price_input"] is None and unpriced["price_currency"] == ""
    assert unpriced["unpriced_reason"] == f"{prices.TABLE_SOURCE} has no price for " \
                                          "openai:gpt-unknown"
    assert len(long_name["unpriced_reason"]) == 200 and long_name["price_input"] is None
    for run in Run.objects.filter(pk__in=[r.pk for r in twin_runs]):
        # The run's counters and its usage rows count the same tokens.
        assert run.total == sum(u.total for u in run.usage_records.all()) == TOKENS
        assert run.cache_read_tokens == 3_000_000_007


@pytest.mark.parametrize("path", PATHS)
def test_a_call_s_hold_is_released_with_its_row(twin_runs, path):
    """What the quota counts moves from the call's worst case to its usage in one transaction:
    never both, never neither."""
    run, _ = twin_runs
    tenant = run.session.tenant_id
    since = UsageRecord.objects.get(dedupe_key=f"earlier:{tenant}").created_at
    holds = [quota_hold(tenant, 50_000, run_id=run.pk)]
    assert committed_spend(tenant, since) == EARLIER + 50_000
    ledger(run, path, holds).record(CALLS[3], turn=1)
    assert holds == [] and not QuotaHold.objects.filter(run_id=run.pk).exists()
    assert committed_spend(tenant, since) == EARLIER + 1


@pytest.mark.parametrize("path", PATHS)
def test_a_fenced_claim_s_call_and_its_redo_read_back_each_with_its_print(twin_runs, path):
    run, _ = twin_runs
    old = ledger(run, path)
    old.record(CALLS[0], turn=1)
    old.record(CALLS[2], turn=2)  # its turn never lands: the claim is taken over
    Run.objects.filter(pk=run.pk).update(epoch=2)
    run.refresh_from_db()
    ledger(run, path).record(CALLS[2], turn=2)  # the new claim's first call: whole
    assert [key_parts(r["dedupe_key"]) for r in rows(run)] == [(1, 1, 0), (1, 2, 0), (2, 2, 0)]
    calls = run_calls(run.pk)
    assert [(c.turn, c.sent) for c in calls] == [(1, _BEFORE), (2, _NOW), (2, _NOW)]


def test_a_key_written_before_calls_named_their_claim_reads_as_epoch_0():
    assert key_parts(f"{uuid.uuid4()}:3:1") == (0, 3, 1)
    assert key_parts(f"{uuid.uuid4()}/12:3:1") == (12, 3, 1)


def _wal_bytes(commit: Any) -> int:
    """The WAL this database's records take for ``commit()`` (record lengths without full-page
    images, which depend on when the last checkpoint was, not on the write, and without the
    pruning of dead rows, which depends on what earlier writes left on the pages): other
    databases of the cluster write WAL meanwhile, so records are read back and counted by their
    database."""
    with connection.cursor() as cursor:
        cursor.execute("CREATE EXTENSION IF NOT EXISTS pg_walinspect")
        cursor.execute("SELECT pg_current_wal_insert_lsn(), oid FROM pg_database "
                       "WHERE datname = current_database()")
        start, db = cursor.fetchone()
    commit()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_current_wal_insert_lsn()")
        end = cursor.fetchone()[0]
        # The call's commit does not wait for the flush: the WAL writer does it within its
        # delay, and only flushed records can be read.
        for _ in range(100):
            cursor.execute("SELECT pg_current_wal_flush_lsn() >= %s::pg_lsn", [end])
            if cursor.fetchone()[0]:
                break
            time.sleep(0.02)
        cursor.execute("SELECT coalesce(sum(record_length - fpi_length), 0) FROM "
                       "pg_get_wal_records_info(%s, %s) WHERE block_ref LIKE %s "
                       "AND (resource_manager, record_type) NOT IN "
                       "(('Heap2', 'PRUNE'), ('Btree', 'DELETE'))", [start, end, f"%/{db}/%"])
        return int(cursor.fetchone()[0])


@pytest.mark.postgresql(reason="PostgreSQL's WAL")
def test_a_call_s_request_print_adds_under_a_hundred_bytes_of_wal(twin_runs):
    """A steady turn's call recorded with and without its print (the edit of the call before):
    the difference is what the print costs per call."""
    with_print, without = twin_runs
    kept, bare = ledger(with_print, "_record_one_statement"), ledger(without,
                                                                       "_record_one_statement")
    kept.record(CALLS[0], turn=1)
    bare.record(CALLS[0], turn=1)
    edit = _wal_bytes(lambda: kept.record(CALLS[2], turn=2))
    plain = _wal_bytes(lambda: bare.record(ModelUsage(**{**CALLS[2].__dict__, "sent": None}),
                                           turn=2))
    print(f"WAL per call: {plain} bytes without the print, {edit} with it (+{edit - plain}; "
          f"the print is {len(fingerprint.encode(_NOW, _BEFORE))} bytes)")
    assert 0 < edit - plain <= 100


@ONE_STATEMENT
def test_only_the_call_s_own_commit_skips_the_flush(twin_runs):
    """Only the call's own transaction is asynchronous: the connection's setting is unchanged
    after it, so the turn's commit on the same connection still waits for the disk."""
    run, _ = twin_runs
    ledger(run, "_record_one_statement").record(CALLS[0], turn=1)
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        assert cursor.fetchone()[0] == "on"
