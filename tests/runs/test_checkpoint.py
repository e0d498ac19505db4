"""The two ways a turn commits write the same rows: the one statement (PostgreSQL, a turn that
does not end the run) and the ORM transaction (SQLite, the last turn). Each path is called
directly on one of two runs made alike, and every row the turn touched is compared."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts import prices
from accounts.models import QuotaHold, Tenant, TenantPrice, UsageRecord
from accounts.usage import period_bounds
from hango_project.pgpool.base import pools
from harness import fingerprint
from harness.messages import ModelUsage, PartPrint, RequestPrint, Usage
from runs import checkpoint, tasks
from runs.models import Message, Run, RunEvent, Session
from runs.services import message_post
from runs.turn_write import Committed, NewMessage, TurnWrite
from runs.worker import claim_run
from tests.support.api import make_caller

ONE_STATEMENT = pytest.mark.postgresql(reason="the one-statement paths (PREPAREd, CTEs)")

# The one statement is written for autocommit (it is its own transaction); run it that way.
pytestmark = pytest.mark.django_db(transaction=True)

QUOTA = 10**12
EARLIER = 1_000  # spent by each tenant before the turn, so the reported spend must include it
CALLS = [
    # Past 2**31, to catch a narrower integer anywhere on the way.
    ModelUsage(purpose="run", provider="anthropic", model="claude-test",
               usage=Usage(input_tokens=1_200, output_tokens=345,
                           cache_read_tokens=3_000_000_000, cache_write_tokens=67)),
    ModelUsage(purpose="summarize", provider="openai", model="gpt-test",
               usage=Usage(input_tokens=5, output_tokens=6, cache_read_tokens=7,
                           cache_write_tokens=8)),
]
TURN_TOKENS = 1_200 + 345 + 3_000_000_000 + 67 + 5 + 6 + 7 + 8
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
PRINTS = [fingerprint.encode(_NOW, _BEFORE), None]
LEASE = datetime(2031, 5, 17, 12, 30, 45, 123456, tzinfo=UTC)
STATE = {"todos": [{"content": "Grüße an 世界 🌍", "status": "in_progress"}],
         "private": {"repeat_call": {"counts": {"a\"b\\c": 2}}, "ratio": 0.5, "none": None}}
ASSISTANT = [
    {"type": "text", "text": "Voilà — 100% %(turn)s done\n\ttab ✓"},
    {"type": "tool_use", "id": "tu_1", "name": "write_file",
     "input": {"path": "/notes/日本語.md", "content": "ünïcödé\n", "nested": [1, [2, {"x": []}]]}},
]
RESULTS = [{"type": "tool_result", "tool_use_id": "tu_1", "content": "écrit ✍", "is_error": False}]
EVENTS = [
    ("message.created", {"seq": 2, "role": "assistant"}),
    ("tool.result", {"tool_use_id": "tu_1", "name": "write_file", "summary": "écrit ✍"}),
    ("todos.updated", {"todos": STATE["todos"]}),
    ("message.created", {"seq": 3, "role": "user"}),
]


@pytest.fixture
def twin_runs(tenant, other_tenant, make_session, hango_settings,
              monkeypatch) -> tuple[Run, Run]:
    """Two runs made alike and claimed once (same turn, epoch, event_seq and lease owner), one
    per tenant so that neither run's usage counts towards the other's quota. Nothing executes
    them but the test."""
    hango_settings(run_inline=False, broker_url="")
    monkeypatch.setattr(tasks, "enqueue_run", lambda run_id: None)
    runs = []
    for owner_tenant, email in ((tenant, "alice@acme.test"), (other_tenant, "carol@globex.test")):
        Tenant.objects.filter(pk=owner_tenant.pk).update(token_quota=QUOTA)
        UsageRecord.objects.create(tenant=owner_tenant, purpose="run", provider="scripted",
                                   model="demo", input_tokens=EARLIER,
                                   dedupe_key=f"earlier:{owner_tenant.pk}")
        session = Session.objects.get(pk=make_session(make_caller(owner_tenant, email))["id"])
        _, queued = message_post(session=session, content="hi")
        run = claim_run(queued.pk, "worker-a")
        assert run is not None
        runs.append(run)
    # The claims' clocks differ; nothing else does.
    Run.objects.filter(pk__in=[r.pk for r in runs]).update(
        lease_expires_at=runs[0].lease_expires_at)
    return runs[0], runs[1]


def _turn(run: Run) -> TurnWrite:
    tenant = Tenant.objects.get(pk=run.session.tenant_id)
    return TurnWrite(
        run_id=run.pk, session_id=run.session_id, epoch=run.epoch, expected_turn=run.turn,
        turn=run.turn + 1, state_json=STATE, lease_expires_at=LEASE,
        messages=[NewMessage(uuid.uuid4(), 2, "assistant", ASSISTANT, 17, "enc@pkg-1/r1"),
                  NewMessage(uuid.uuid4(), 3, "user", RESULTS)],
        events=EVENTS, usage=sum((call.usage for call in CALLS), Usage()),
        tenant_id=tenant.pk, agent_id=run.agent_id, calls=CALLS, prints=PRINTS,
        quota=tenant.token_quota, period_start=period_bounds(tenant.quota_period)[0],
    )


def _rows(run_id: uuid.UUID) -> dict[str, Any]:
    """Every row of the run's session, run and tenant usage, without ids and creation times;
    the run's own foreign keys (and ids inside dedupe keys) read as placeholders, so a row
    pointing elsewhere still differs."""
    run = Run.objects.select_related("session").get(pk=run_id)
    own = {run.pk: "<run>", run.session_id: "<session>", run.session.tenant_id: "<tenant>",
           run.agent_id: "<agent>"}

    def plain(row: dict[str, Any], *drop: str) -> dict[str, Any]:
        out = {k: own.get(v, v) if k.endswith("_id") else v
               for k, v in row.items() if k not in {"id", "created_at", *drop}}
        if "dedupe_key" in out:
            for key, name in own.items():
                out["dedupe_key"] = out["dedupe_key"].replace(str(key), name)
        return out

    return {
        "run": plain(Run.objects.values().get(pk=run_id), "updated_at", "started_at"),
        "messages": [plain(m) for m in
                     Message.objects.filter(session_id=run.session_id).order_by("seq").values()],
        "events": [plain(e) for e in
                   RunEvent.objects.filter(run_id=run_id).order_by("seq").values()],
        "usage": sorted((plain(u) for u in UsageRecord.objects.filter(
            tenant_id=run.session.tenant_id).values()), key=lambda u: u["dedupe_key"]),
    }


@ONE_STATEMENT
@pytest.mark.parametrize("cancel_requested", [False, True])
def test_both_paths_write_the_same_rows(twin_runs, cancel_requested):
    sql_run, orm_run = twin_runs
    Run.objects.filter(pk__in=[sql_run.pk, orm_run.pk]).update(cancel_requested=cancel_requested)
    assert _rows(sql_run.pk) == _rows(orm_run.pk)  # the twins start alike

    by_sql = checkpoint._commit_one_statement(_turn(sql_run))
    by_orm = checkpoint._commit_orm(_turn(orm_run))

    expected = Committed(cancel_requested=cancel_requested, quota_used=EARLIER + TURN_TOKENS)
    assert by_sql == by_orm == expected
    rows = _rows(sql_run.pk)
    assert rows == _rows(orm_run.pk)
    # Not alike by both writing nothing: the turn is all there.
    assert [(m["seq"], m["role"], m["content"]) for m in rows["messages"][1:]] == [
        (2, "assistant", ASSISTANT), (3, "user", RESULTS)]
    assert [(m["content_tokens"], m["tokens_counter"]) for m in rows["messages"][1:]] == [
        (17, "enc@pkg-1/r1"), (None, "")]
    assert [(e["type"], e["data"]) for e in rows["events"][-len(EVENTS):]] == EVENTS
    assert [e["seq"] for e in rows["events"]] == list(range(1, len(EVENTS) + 3))
    assert [u["dedupe_key"] for u in rows["usage"]] == [
        "<run>:1:0", "<run>:1:1", "earlier:<tenant>"]
    assert [None if u["request_print"] is None else bytes(u["request_print"])
            for u in rows["usage"]] == [*PRINTS, None]
    turned = {"turn": 1, "state_json": STATE, "event_seq": len(EVENTS) + 2, "epoch": 1,
              "lease_owner": "worker-a", "lease_expires_at": LEASE, "status": "running",
              "cancel_requested": cancel_requested, "input_tokens": 1_205, "output_tokens": 351,
              "cache_read_tokens": 3_000_000_007, "cache_write_tokens": 75}
    assert {k: rows["run"][k] for k in turned} == turned
    for run in Run.objects.filter(pk__in=[sql_run.pk, orm_run.pk]):
        # The run's counters and its usage rows count the same tokens.
        assert run.total == sum(u.total for u in run.usage_records.all()) == TURN_TOKENS


@pytest.mark.parametrize("path", [pytest.param("_commit_one_statement", marks=ONE_STATEMENT),
                                  "_commit_orm"])
def test_a_fenced_write_is_refused_and_writes_nothing(twin_runs, path):
    run, _ = twin_runs
    before = _rows(run.pk)
    stale = replace(_turn(run), epoch=run.epoch - 1)  # another claim has taken the run since
    assert getattr(checkpoint, path)(stale) is None
    assert _rows(run.pk) == before


@pytest.mark.parametrize("path", [pytest.param("_commit_one_statement", marks=ONE_STATEMENT),
                                  "_commit_orm"])
def test_a_duplicate_turn_is_refused_and_writes_nothing(twin_runs, path):
    run, _ = twin_runs
    write = _turn(run)
    commit = getattr(checkpoint, path)
    assert commit(write) is not None
    after_first = _rows(run.pk)
    assert commit(write) is None  # a redelivery: the run's turn is no longer the expected one
    assert _rows(run.pk) == after_first


def _prepared_statements() -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT name FROM pg_prepared_statements")
        return {name for (name,) in cursor.fetchall()}


def _new_connection() -> None:
    """End this thread's connection: the next statement runs on a new session (a pooled one
    that ended, by its age or an error, is closed, not given to the next taker). The pool's
    idle connections go too: one another thread gave back (an earlier test's live server or
    run) has the statements prepared, and the next taker would get it."""
    connection.ensure_connection()
    connection.connection.close()
    connection.close()
    for pool in pools():
        pool.close_idle()


@ONE_STATEMENT
def test_the_statement_is_prepared_once_per_connection(twin_runs):
    run, _ = twin_runs
    write = _turn(run)
    _new_connection()
    with CaptureQueriesContext(connection) as first:
        assert checkpoint._commit_one_statement(write) is not None
    assert "hango_turn_release" in _prepared_statements()
    again = replace(_turn(run), expected_turn=1, turn=2, messages=[
        NewMessage(uuid.uuid4(), 4, "assistant", ASSISTANT)], calls=CALLS[:1], prints=PRINTS[:1])
    with CaptureQueriesContext(connection) as second:
        assert checkpoint._commit_one_statement(again) is not None
    assert [q["sql"].split()[0] for q in first] == ["PREPARE", "EXECUTE"]
    assert [q["sql"].split()[0] for q in second] == ["EXECUTE"]


@ONE_STATEMENT
@pytest.mark.parametrize("lose", ["deallocate", "reconnect"])
def test_a_connection_that_lost_the_statement_prepares_it_again(twin_runs, lose):
    sql_run, orm_run = twin_runs
    assert checkpoint._commit_one_statement(_turn(sql_run)) is not None
    assert checkpoint._commit_orm(_turn(orm_run)) is not None
    if lose == "deallocate":  # the server forgot it, the connection is the same
        with connection.cursor() as cursor:
            cursor.execute("DEALLOCATE ALL")
    else:  # the connection ended (max age, an error): the next one is a new session
        _new_connection()
    assert _prepared_statements() == set()
    second = {run.pk: replace(_turn(run), expected_turn=1, turn=2, calls=CALLS[1:],
                              prints=PRINTS[1:], messages=[
        NewMessage(uuid.uuid4(), 4, "assistant", ASSISTANT)]) for run in (sql_run, orm_run)}
    assert checkpoint._commit_one_statement(second[sql_run.pk]) is not None
    assert checkpoint._commit_orm(second[orm_run.pk]) is not None
    assert _rows(sql_run.pk) == _rows(orm_run.pk)
    assert "hango_turn_release" in _prepared_statements()


@pytest.mark.parametrize(("status", "error", "cancel_requested"), [
    ("completed", None, False),
    ("failed", {"code": "max_turns", "message": "Stopped after 2 turns."}, False),
    ("cancelled", None, True),  # a cancel asked for is answered
    ("awaiting_approval", None, True),  # a pause keeps it asked
])
@ONE_STATEMENT
def test_both_paths_finish_a_run_alike(twin_runs, status, error, cancel_requested):
    sql_run, orm_run = twin_runs
    Run.objects.filter(pk__in=[sql_run.pk, orm_run.pk]).update(cancel_requested=cancel_requested)
    last = {run.pk: replace(_turn(run), finish=(status, error)) for run in twin_runs}
    QuotaHold.objects.create(tenant_id=last[sql_run.pk].tenant_id, run=sql_run, tokens=9,
                             expires_at=LEASE)
    QuotaHold.objects.create(tenant_id=last[orm_run.pk].tenant_id, run=orm_run, tokens=9,
                             expires_at=LEASE)

    by_sql = checkpoint._commit_one_statement(last[sql_run.pk])
    by_orm = checkpoint._commit_orm(last[orm_run.pk])

    assert by_sql == by_orm
    assert by_sql is not None and by_sql.cancel_requested == (status == "awaiting_approval")

    def finished(run_id: uuid.UUID) -> dict[str, Any]:
        rows = _rows(run_id)
        rows["run"]["finished_at"] = rows["run"]["finished_at"] is not None
        rows["holds"] = QuotaHold.objects.filter(run_id=run_id).count()
        return rows

    rows = finished(sql_run.pk)
    assert rows == finished(orm_run.pk)
    assert (rows["run"]["status"], rows["run"]["error"], rows["run"]["lease_owner"],
            rows["run"]["lease_expires_at"], rows["run"]["finished_at"], rows["holds"]) == (
        status, error, "", None, status != "awaiting_approval", 0)
    assert rows["events"][-1]["type"] == "run.status"
    assert rows["events"][-1]["data"] == {"status": status, "turn": 1,
                                          **({"error": error} if error else {})}


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
        cursor.execute("SELECT coalesce(sum(record_length - fpi_length), 0) FROM "
                       "pg_get_wal_records_info(%s, pg_current_wal_flush_lsn()) "
                       "WHERE block_ref LIKE %s AND (resource_manager, record_type) NOT IN "
                       "(('Heap2', 'PRUNE'), ('Btree', 'DELETE'))", [start, f"%/{db}/%"])
        return int(cursor.fetchone()[0])


@pytest.mark.postgresql(reason="PostgreSQL's WAL")
def test_a_turn_s_request_print_adds_under_a_hundred_bytes_of_wal(twin_runs):
    """The same turn committed with and without what the request diff keeps (its call's print,
    and its assistant message's turn in its event): the difference is the cost per turn."""
    with_print, without = twin_runs
    with_turn = [(t, {**d, "turn": 1}) if d.get("role") == "assistant" else (t, d)
                 for t, d in EVENTS]
    kept = _wal_bytes(lambda: checkpoint._commit_one_statement(
        replace(_turn(with_print), events=with_turn)))
    bare = _wal_bytes(lambda: checkpoint._commit_one_statement(
        replace(_turn(without), prints=[])))
    print(f"WAL per turn: {bare} bytes without the print, {kept} with it "
          f"(+{kept - bare}; the print is {len(PRINTS[0])} bytes)")
    assert 0 < kept - bare <= 100


PRICED_CALLS = [
    ModelUsage(purpose="run", provider="anthropic", model="claude-sonnet-4-5",
               usage=Usage(input_tokens=1_000, output_tokens=100, cache_read_tokens=10_000,
                           cache_write_tokens=500)),
    ModelUsage(purpose="run", provider="scripted", model="demo", usage=Usage(input_tokens=9)),
    ModelUsage(purpose="summarize", provider="openai", model="gpt-unknown",
               usage=Usage(input_tokens=5, output_tokens=6)),
    # A name as long as the column allows: its reason is clipped to the reason's column.
    ModelUsage(purpose="run", provider="openai", model="m" * 200, usage=Usage(input_tokens=1)),
]


@ONE_STATEMENT
def test_both_paths_price_each_call_alike(twin_runs):
    """The table's price, the tenant's own (for a model the table does not price) and none,
    the same by either path."""
    sql_run, orm_run = twin_runs
    for run in (sql_run, orm_run):
        TenantPrice.objects.create(
            tenant_id=run.session.tenant_id, provider="scripted", model="demo", currency="EUR",
            input=Decimal("0.5"), cache_write=Decimal("0.6"), cache_read=Decimal("0.05"),
            output=Decimal("2"))
    usage = sum((call.usage for call in PRICED_CALLS), Usage())
    assert checkpoint._commit_one_statement(
        replace(_turn(sql_run), calls=PRICED_CALLS, usage=usage, prints=[])) is not None
    assert checkpoint._commit_orm(replace(_turn(orm_run), calls=PRICED_CALLS, usage=usage,
                                          prints=[]))
    rows = _rows(sql_run.pk)
    assert rows == _rows(orm_run.pk)
    table, tenant, unpriced, long_name = rows["usage"][:4]
    sonnet = prices.table_price("anthropic", "claude-sonnet-4-5")
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
