"""The two ways a turn commits write the same rows: the one statement (PostgreSQL, a turn that
does not end the run) and the ORM transaction (SQLite, the last turn). Each path is called
directly on one of two runs made alike, and every row the turn touched is compared. (The turn's
model calls are not the commit's: tests/runs/execution/test_call_ledger.py.)"""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.models import QuotaHold, Tenant, UsageRecord
from accounts.usage import period_bounds
from hango_project.pgpool.base import pools
from runs.execution.store import pg_turn
from runs.execution.store.orm import OrmStore
from runs.execution.turn_write import Committed, NewMessage, TurnWrite
from runs.models import Message, Run, RunEvent
from tests.runs.conftest import EARLIER

ONE_STATEMENT = pytest.mark.postgresql(reason="the one-statement paths (PREPAREd, CTEs)")

# The one statement is written for autocommit (it is its own transaction); run it that way.
pytestmark = pytest.mark.django_db(transaction=True)

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


# Each store's commit, by the name the tests are parametrised with.
_COMMITS = {"_commit_one_statement": pg_turn.commit_one_statement,
            "_commit_orm": OrmStore().commit_turn}


def _turn(run: Run) -> TurnWrite:
    tenant = Tenant.objects.get(pk=run.session.tenant_id)
    return TurnWrite(
        run_id=run.pk, session_id=run.session_id, epoch=run.epoch, expected_turn=run.turn,
        turn=run.turn + 1, state_json=STATE, lease_expires_at=LEASE,
        messages=[NewMessage(uuid.uuid4(), 2, "assistant", ASSISTANT, 17, "enc@pkg-1/r1"),
                  NewMessage(uuid.uuid4(), 3, "user", RESULTS)],
        events=EVENTS, tenant_id=tenant.pk, agent_id=run.agent_id,
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

    by_sql = pg_turn.commit_one_statement(_turn(sql_run))
    by_orm = OrmStore().commit_turn(_turn(orm_run))

    expected = Committed(cancel_requested=cancel_requested, quota_used=EARLIER)
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
    # The turn's calls were recorded as they ended: the commit writes none of their usage.
    assert [u["dedupe_key"] for u in rows["usage"]] == ["earlier:<tenant>"]
    turned = {"turn": 1, "state_json": STATE, "event_seq": len(EVENTS) + 2, "epoch": 1,
              "lease_owner": "worker-a", "lease_expires_at": LEASE, "status": "running",
              "cancel_requested": cancel_requested, "input_tokens": 0}
    assert {k: rows["run"][k] for k in turned} == turned


@pytest.mark.parametrize("path", [pytest.param("_commit_one_statement", marks=ONE_STATEMENT),
                                  "_commit_orm"])
def test_a_fenced_write_is_refused_and_writes_nothing(twin_runs, path):
    run, _ = twin_runs
    before = _rows(run.pk)
    stale = replace(_turn(run), epoch=run.epoch - 1)  # another claim has taken the run since
    assert _COMMITS[path](stale) is None
    assert _rows(run.pk) == before


@pytest.mark.parametrize("path", [pytest.param("_commit_one_statement", marks=ONE_STATEMENT),
                                  "_commit_orm"])
def test_a_duplicate_turn_is_refused_and_writes_nothing(twin_runs, path):
    run, _ = twin_runs
    write = _turn(run)
    commit = _COMMITS[path]
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
        assert pg_turn.commit_one_statement(write) is not None
    assert "hango_turn_release" in _prepared_statements()
    again = replace(_turn(run), expected_turn=1, turn=2, messages=[
        NewMessage(uuid.uuid4(), 4, "assistant", ASSISTANT)])
    with CaptureQueriesContext(connection) as second:
        assert pg_turn.commit_one_statement(again) is not None
    assert [q["sql"].split()[0] for q in first] == ["PREPARE", "EXECUTE"]
    assert [q["sql"].split()[0] for q in second] == ["EXECUTE"]


@ONE_STATEMENT
@pytest.mark.parametrize("lose", ["deallocate", "reconnect"])
def test_a_connection_that_lost_the_statement_prepares_it_again(twin_runs, lose):
    sql_run, orm_run = twin_runs
    assert pg_turn.commit_one_statement(_turn(sql_run)) is not None
    assert OrmStore().commit_turn(_turn(orm_run)) is not None
    if lose == "deallocate":  # the server forgot it, the connection is the same
        with connection.cursor() as cursor:
            cursor.execute("DEALLOCATE ALL")
    else:  # the connection ended (max age, an error): the next one is a new session
        _new_connection()
    assert _prepared_statements() == set()
    second = {run.pk: replace(_turn(run), expected_turn=1, turn=2, messages=[
        NewMessage(uuid.uuid4(), 4, "assistant", ASSISTANT)]) for run in (sql_run, orm_run)}
    assert pg_turn.commit_one_statement(second[sql_run.pk]) is not None
    assert OrmStore().commit_turn(second[orm_run.pk]) is not None
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

    by_sql = pg_turn.commit_one_statement(last[sql_run.pk])
    by_orm = OrmStore().commit_turn(last[orm_run.pk])

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
