"""The store contract (issue 37): what runs needs from its database, asserted the same way
against both stores — PostgreSQL's one statements (under the suite's PostgreSQL) and the ORM's
(on either engine: the SQLite pass runs it there, the quickstart's engine). A path of one store
that drifts from its twin fails here."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from accounts.audit import audit_entry
from accounts.models import AuditAction, AuditEntry, QuotaHold, Tenant, UsageRecord
from accounts.usage import quota_hold
from harness.errors import Superseded
from harness.messages import ModelUsage, Usage
from runs.execution import tasks
from runs.execution.fence import Claim, take_over
from runs.execution.preload import NOTHING_PRELOADED
from runs.execution.store import RunStore, store
from runs.execution.store.orm import OrmStore
from runs.execution.turn_write import NewMessage, TurnWrite
from runs.intake.services import message_post
from runs.models import (
    Message,
    PendingMessage,
    Run,
    RunEvent,
    RunStatus,
    Session,
    ToolCallStart,
)

# The one statements run in autocommit (each is its own transaction): test them that way.
pytestmark = pytest.mark.django_db(transaction=True)

LEASE = timedelta(minutes=5)


def _postgresql() -> RunStore:
    from runs.execution.store.postgresql import PostgreSQLStore
    return PostgreSQLStore()


@pytest.fixture(params=[
    pytest.param(_postgresql, id="postgresql",
                 marks=pytest.mark.postgresql(reason="PostgreSQL's store: PREPAREd statements")),
    pytest.param(OrmStore, id="orm"),
])
def runs_store(request) -> RunStore:
    return request.param()


@pytest.fixture
def queued_run(alice, make_session, hango_settings, monkeypatch) -> Run:
    """A queued run nothing executes: in these committing tests a post's hand-over would run it
    in this process (no broker), so the hand-over is dropped."""
    hango_settings(run_inline=False, broker_url="")
    monkeypatch.setattr(tasks, "enqueue_run", lambda run_id, **_: None)
    session = make_session(alice)
    return message_post(session=Session.objects.get(pk=session["id"]), content="hi")[1]


def _statuses(run: Run) -> list[str]:
    return [e.data["status"] for e in RunEvent.objects.filter(run=run, type="run.status")]


def test_the_store_is_picked_once_for_the_engine(db):
    from django.db import connection
    picked = store()
    assert picked is store()
    assert (type(picked).__name__ == "PostgreSQLStore") == (connection.vendor == "postgresql")


def test_a_claim_starts_a_queued_run_under_a_new_epoch(runs_store, queued_run):
    run = runs_store.claim(queued_run.pk, "worker-a", LEASE)
    assert run is not None and run.pk == queued_run.pk
    assert (run.status, run.epoch, run.lease_owner) == (RunStatus.RUNNING, 1, "worker-a")
    assert run.lease_expires_at > timezone.now() and run.started_at is not None
    # With what the worker reads next, loaded: its agent, session and tenant.
    assert run.agent.pk == queued_run.agent_id and run.session.tenant.pk is not None
    stored = Run.objects.get(pk=run.pk)
    assert (stored.status, stored.epoch, stored.lease_owner) == (RunStatus.RUNNING, 1, "worker-a")
    assert _statuses(run) == ["queued", "running"]


def test_a_live_lease_keeps_others_out_and_its_owner_in(runs_store, queued_run):
    assert runs_store.claim(queued_run.pk, "worker-a", LEASE) is not None
    assert runs_store.claim(queued_run.pk, "worker-b", LEASE) is None
    assert Run.objects.get(pk=queued_run.pk).epoch == 1
    again = runs_store.claim(queued_run.pk, "worker-a", LEASE)  # its own lease: a later slice
    assert again is not None and again.epoch == 2
    assert _statuses(again) == ["queued", "running"]  # a later slice writes no status event


def test_an_expired_lease_is_taken_over_with_its_event(runs_store, queued_run):
    runs_store.claim(queued_run.pk, "worker-a", LEASE)
    Run.objects.filter(pk=queued_run.pk).update(
        lease_expires_at=timezone.now() - timedelta(seconds=1))
    taken = runs_store.claim(queued_run.pk, "worker-b", LEASE)
    assert taken is not None and (taken.epoch, taken.lease_owner) == (2, "worker-b")
    event = RunEvent.objects.filter(run=taken, type="run.lease_taken_over").get()
    assert {k: event.data[k] for k in ("from_worker", "from_epoch", "by")} == {
        "from_worker": "worker-a", "from_epoch": 1, "by": "claim"}


def test_a_cancel_asked_while_nobody_ran_it_is_honoured_not_claimed(runs_store, queued_run):
    Run.objects.filter(pk=queued_run.pk).update(cancel_requested=True)
    assert runs_store.claim(queued_run.pk, "worker-a", LEASE) is None
    assert Run.objects.get(pk=queued_run.pk).status == RunStatus.CANCELLED


def test_nothing_to_claim_is_none(runs_store, queued_run):
    assert runs_store.claim(uuid.uuid4(), "worker-a", LEASE) is None
    Run.objects.filter(pk=queued_run.pk).update(status=RunStatus.COMPLETED)
    assert runs_store.claim(queued_run.pk, "worker-a", LEASE) is None


def _turn(run: Run, *, epoch: int | None = None, finish: tuple | None = None) -> TurnWrite:
    return TurnWrite(
        run_id=run.pk, session_id=run.session_id, epoch=run.epoch if epoch is None else epoch,
        expected_turn=run.turn, turn=run.turn + 1, state_json={"todos": ["ü"]},
        lease_expires_at=timezone.now() + timedelta(minutes=1),
        messages=[NewMessage(uuid.uuid4(), 2, "assistant", [{"type": "text", "text": "hé"}])],
        events=[("message.created", {"seq": 2, "role": "assistant"})], finish=finish)


def test_a_turn_commits_its_messages_events_and_state(runs_store, queued_run):
    run = runs_store.claim(queued_run.pk, "worker-a", LEASE)
    committed = runs_store.commit_turn(_turn(run))
    assert committed is not None and not committed.cancel_requested
    stored = Run.objects.get(pk=run.pk)
    assert (stored.turn, stored.state_json) == (1, {"todos": ["ü"]})
    assert list(Message.objects.filter(run=run).order_by("seq").values_list("seq", "role")) == [
        (1, "user"), (2, "assistant")]
    assert RunEvent.objects.filter(run=run).order_by("-seq").first().type == "message.created"
    assert stored.event_seq == RunEvent.objects.filter(run=run).count()


def test_the_last_turn_ends_the_run(runs_store, queued_run):
    run = runs_store.claim(queued_run.pk, "worker-a", LEASE)
    assert runs_store.commit_turn(_turn(run, finish=(RunStatus.COMPLETED, None))) is not None
    stored = Run.objects.get(pk=run.pk)
    assert (stored.status, stored.lease_owner) == (RunStatus.COMPLETED, "")
    assert stored.finished_at is not None and _statuses(run)[-1] == "completed"


def test_a_fenced_turn_writes_nothing(runs_store, queued_run):
    run = runs_store.claim(queued_run.pk, "worker-a", LEASE)
    before = (Message.objects.count(), RunEvent.objects.count())
    assert runs_store.commit_turn(_turn(run, epoch=run.epoch - 1)) is None
    assert (Message.objects.count(), RunEvent.objects.count()) == before
    assert Run.objects.get(pk=run.pk).turn == 0


def test_a_poll_reads_the_cancel_flag_and_whether_the_claim_holds(runs_store, queued_run):
    run = runs_store.claim(queued_run.pk, "worker-a", LEASE)
    claim = Claim(run.pk, run.epoch)
    assert runs_store.poll(claim) == (False, True)
    Run.objects.filter(pk=run.pk).update(cancel_requested=True)
    assert runs_store.poll(claim) == (True, True)
    locked = Run.objects.get(pk=run.pk)
    take_over(locked)
    locked.save()
    assert runs_store.poll(claim) == (True, False)
    assert runs_store.poll(Claim(uuid.uuid4(), 1)) == (False, False)


def test_the_watch_renews_held_leases_and_reads_their_news(runs_store, queued_run):
    run = runs_store.claim(queued_run.pk, "worker-a", LEASE)
    statements = runs_store.watch_statements()
    try:
        held, gone = (run.pk, run.epoch), (uuid.uuid4(), 1)  # gone: no such run
        until = timezone.now() + timedelta(minutes=5)
        assert statements.renew([held, gone], until, 1.0) == {gone}
        assert Run.objects.get(pk=run.pk).lease_expires_at == until
        news = statements.read([held, gone])
        assert held not in news or news[held] is None or news[held] == (False, True)
        assert news[gone] is None
        Run.objects.filter(pk=run.pk).update(cancel_requested=True)
        assert statements.read([held])[held] == (True, True)
    finally:
        statements.close()


def test_a_call_is_recorded_with_its_usage_and_settles_its_holds(runs_store, queued_run):
    run = runs_store.claim(queued_run.pk, "worker-a", LEASE)
    tenant = run.session.tenant
    Tenant.objects.filter(pk=tenant.pk).update(token_quota=10**9)
    holds = [quota_hold(tenant.pk, 500, run_id=run.pk)]
    call = ModelUsage(purpose="run", provider="scripted", model="demo",
                      usage=Usage(input_tokens=7, output_tokens=3, cache_read_tokens=2))
    runs_store.record_call(run, call, f"{run.pk}/1:1:0", b"print", holds)
    row = UsageRecord.objects.get(run_id=run.pk)
    assert (row.dedupe_key, row.input_tokens, row.output_tokens, row.cache_read_tokens) == (
        f"{run.pk}/1:1:0", 7, 3, 2)
    assert (row.tenant_id, row.agent_id, bytes(row.request_print)) == (
        tenant.pk, run.agent_id, b"print")
    counted = Run.objects.get(pk=run.pk)
    assert (counted.input_tokens, counted.output_tokens, counted.cache_read_tokens) == (7, 3, 2)
    assert not QuotaHold.objects.filter(pk__in=holds).exists()


def test_a_preload_reads_the_run_s_context_or_leaves_it_to_each_store(runs_store, queued_run):
    session = queued_run.session
    reads = runs_store.preload(session.tenant_id, queued_run.agent_id, session.pk)
    # PostgreSQL reads it in one round trip; SQLite's store leaves each store its own read.
    assert reads is NOTHING_PRELOADED or (
        [(seq, role) for seq, role, *_ in reads.history] == [(1, "user")]
        and (reads.overrides, reads.memory, reads.files) == ([], [], []))
    with transaction.atomic():  # a timeout set for it would outlive the statement: none
        assert runs_store.preload(session.tenant_id, queued_run.agent_id,
                                  session.pk) is NOTHING_PRELOADED


def test_a_queue_waiting_after_a_run_names_its_session(runs_store, queued_run):
    assert runs_store.waiting_after(queued_run.pk) is None
    assert runs_store.waiting_after(uuid.uuid4()) is None
    later = Run.objects.create(session=queued_run.session, agent_id=queued_run.agent_id,
                               status=RunStatus.PENDING)
    PendingMessage.objects.create(session=queued_run.session, run=later,
                                  content=[{"type": "text", "text": "then"}])
    assert runs_store.waiting_after(queued_run.pk) == queued_run.session_id
    assert runs_store.waiting_after(str(queued_run.pk)) == queued_run.session_id


def test_an_mcp_call_is_journalled_once_under_the_claim(runs_store, queued_run):
    run = runs_store.claim(queued_run.pk, "worker-a", LEASE)
    claim = Claim(run.pk, run.epoch)
    for _ in range(2):  # a key is written once
        runs_store.journal_call(claim, "mcp:1", tool_use_id="tu_1", tool="search")
    assert list(ToolCallStart.objects.filter(run_id=run.pk).values_list(
        "key", "tool_use_id", "tool", "epoch")) == [("mcp:1", "tu_1", "search", run.epoch)]
    locked = Run.objects.get(pk=run.pk)
    take_over(locked)
    locked.save()
    with pytest.raises(Superseded):
        runs_store.journal_call(claim, "mcp:2", tool_use_id="tu_2", tool="search")
    assert ToolCallStart.objects.filter(run_id=run.pk).count() == 1


def test_a_stream_reads_the_run_s_events_with_their_messages_and_the_run_as_of_them(
        runs_store, queued_run):
    run = runs_store.claim(queued_run.pk, "worker-a", LEASE)
    assert runs_store.commit_turn(_turn(run)) is not None
    read = runs_store.read_stream(run.pk, after=0, limit=100)
    stored = Run.objects.get(pk=run.pk)
    assert (read.status, read.turn) == (RunStatus.RUNNING, 1)
    assert [e.seq for e in read.events] == list(range(1, stored.event_seq + 1))
    answer = read.events[-1]
    assert answer.type == "message.created" and answer.data["content"] == [
        {"type": "text", "text": "hé"}]
    assert answer.data["id"] == str(Message.objects.get(run=run, seq=2).pk)
    assert runs_store.read_stream(run.pk, after=answer.seq, limit=100) == (
        [], RunStatus.RUNNING, 1)
    assert [e.seq for e in runs_store.read_stream(run.pk, after=0, limit=1).events] == [1]
    assert runs_store.read_stream(uuid.uuid4(), after=0, limit=100) == ([], None, 0)


def test_a_post_queues_its_run_with_its_message_status_event_and_audit_row(
        runs_store, alice, make_session):
    session = Session.objects.select_related("agent", "tenant").get(
        pk=make_session(alice)["id"])

    def audit(run: Run, message: Message) -> AuditEntry:
        return audit_entry(actor=None, tenant=session.tenant_id, action=AuditAction.RUN_CREATE,
                           obj_type="run", obj_id=run.pk,
                           detail={"message_id": str(message.pk)})

    with transaction.atomic():
        message, run, behind = runs_store.start_run(
            session, [{"type": "text", "text": "hi"}], audit)
    stored = Run.objects.get(pk=run.pk)
    assert (stored.status, stored.event_seq, stored.agent_version) == (
        RunStatus.QUEUED, 1, session.agent.version)
    assert list(Message.objects.filter(session=session).values_list("pk", "seq", "run_id")) == [
        (message.pk, 1, run.pk)]
    assert _statuses(run) == ["queued"]
    assert AuditEntry.objects.filter(action=AuditAction.RUN_CREATE,
                                     object_id=str(run.pk)).count() == 1
    assert behind in (False, None)  # one busy run: within its share (None: not counted)
