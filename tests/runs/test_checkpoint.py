"""The two ways a turn commits write the same rows: the one statement (PostgreSQL, a turn that
does not end the run) and the ORM transaction (SQLite, the last turn). Each path is called
directly on one of two runs made alike, and every row the turn touched is compared."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

from accounts.models import Tenant, UsageRecord
from accounts.usage import period_bounds
from harness.messages import ModelUsage, Usage
from runs import checkpoint
from runs.checkpoint import Committed, TurnWrite
from runs.models import Message, Run, RunEvent, Session
from runs.services import message_post
from runs.worker import claim_run
from tests.support.api import make_caller

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
def twin_runs(tenant, other_tenant, make_session, hango_settings) -> tuple[Run, Run]:
    """Two runs made alike and claimed once (same turn, epoch, event_seq and lease owner), one
    per tenant so that neither run's usage counts towards the other's quota."""
    hango_settings(run_inline=False, broker_url="")
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
        messages=[(uuid.uuid4(), 2, "assistant", ASSISTANT), (uuid.uuid4(), 3, "user", RESULTS)],
        events=EVENTS, usage=sum((call.usage for call in CALLS), Usage()),
        tenant_id=tenant.pk, agent_id=run.agent_id, calls=CALLS,
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
    assert [(e["type"], e["data"]) for e in rows["events"][-len(EVENTS):]] == EVENTS
    assert [e["seq"] for e in rows["events"]] == list(range(1, len(EVENTS) + 3))
    assert [u["dedupe_key"] for u in rows["usage"]] == [
        "<run>:1:0", "<run>:1:1", "earlier:<tenant>"]
    turned = {"turn": 1, "state_json": STATE, "event_seq": len(EVENTS) + 2, "epoch": 1,
              "lease_owner": "worker-a", "lease_expires_at": LEASE, "status": "running",
              "cancel_requested": cancel_requested, "input_tokens": 1_205, "output_tokens": 351,
              "cache_read_tokens": 3_000_000_007, "cache_write_tokens": 75}
    assert {k: rows["run"][k] for k in turned} == turned
    for run in Run.objects.filter(pk__in=[sql_run.pk, orm_run.pk]):
        # The run's counters and its usage rows count the same tokens.
        assert run.total == sum(u.total for u in run.usage_records.all()) == TURN_TOKENS


@pytest.mark.parametrize("path", ["_commit_one_statement", "_commit_orm"])
def test_a_fenced_write_is_refused_and_writes_nothing(twin_runs, path):
    run, _ = twin_runs
    before = _rows(run.pk)
    stale = replace(_turn(run), epoch=run.epoch - 1)  # another claim has taken the run since
    assert getattr(checkpoint, path)(stale) is None
    assert _rows(run.pk) == before


@pytest.mark.parametrize("path", ["_commit_one_statement", "_commit_orm"])
def test_a_duplicate_turn_is_refused_and_writes_nothing(twin_runs, path):
    run, _ = twin_runs
    write = _turn(run)
    commit = getattr(checkpoint, path)
    assert commit(write) is not None
    after_first = _rows(run.pk)
    assert commit(write) is None  # a redelivery: the run's turn is no longer the expected one
    assert _rows(run.pk) == after_first
