"""Fencing a stalled holder: whoever changes a run from outside the worker that holds it (a
cancel, a resume, an approval, the reconciler, a claim that honours a cancel) advances its epoch,
so the stalled worker's next commit, store write and event are refused, and it stops.

A stall is a worker that stopped past its lease (SIGSTOP, a VM pause, a GC stall) and then goes
on as if nothing happened: here, a claim whose lease is set in the past, driven by hand."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from agents.models import MemoryFile
from agents.stores import DbMemoryStore
from harness.errors import Superseded
from harness.providers.scripted import ScriptedModel, text, tool_call
from harness.stores import Summary
from runs.execution import handoff, tasks, worker
from runs.execution.checkpointer import Fenced
from runs.execution.fence import Claim
from runs.execution.stores import DbFileStore, DbSummaryStore
from runs.execution.worker import Outcome, claim_run
from runs.intake.services import message_post, run_cancel, run_resume
from runs.models import Message, Run, RunEvent, RunStatus, Session, SessionFile
from tests.support.runs import one_turn


def _stall(run: Run) -> None:
    """The holder stopped past its lease."""
    Run.objects.filter(pk=run.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))


def _writes_of(run: Run) -> tuple[int, int]:
    return (Message.objects.filter(run_id=run.pk).count(),
            RunEvent.objects.filter(run_id=run.pk).count())


def test_a_cancel_fences_out_a_holder_whose_lease_ran_out(queued_run):
    stale = claim_run(queued_run.pk, "worker-a")
    _stall(stale)
    cancelled = run_cancel(run=stale)
    assert cancelled.status == RunStatus.CANCELLED and cancelled.epoch == stale.epoch + 1
    before = _writes_of(stale)

    _, halt = one_turn(stale)  # the stalled worker goes on with its turn

    assert halt == Fenced()
    assert _writes_of(stale) == before  # no message, no event after the cancel
    after = Run.objects.get(pk=stale.pk)
    assert (after.status, after.turn) == (RunStatus.CANCELLED, 0)


def test_a_message_posted_after_the_cancel_does_not_meet_the_stalled_holder(queued_run):
    stale = claim_run(queued_run.pk, "worker-a")
    _stall(stale)
    run_cancel(run=stale)
    session = Session.objects.get(pk=stale.session_id)
    _, second = message_post(session=session, content="and now this")

    _, halt = one_turn(stale)  # would have written seq 2, the new message's seq

    assert halt == Fenced()
    assert list(Message.objects.filter(session=session).values_list("seq", "run_id")) == [
        (1, stale.pk), (2, second.pk)]
    assert Run.objects.get(pk=stale.pk).status == RunStatus.CANCELLED
    fresh = claim_run(second.pk, "worker-b")
    assert one_turn(fresh)[1] is None  # the new run goes on from seq 3
    assert Message.objects.filter(session=session).count() == 4


def test_a_resume_after_the_cancel_keeps_the_stalled_holder_out(queued_run):
    stale = claim_run(queued_run.pk, "worker-a")
    _stall(stale)
    run_cancel(run=stale)
    resumed = run_resume(run=Run.objects.get(pk=stale.pk))
    assert resumed.status == RunStatus.QUEUED and resumed.epoch == stale.epoch + 2

    assert one_turn(stale)[1] == Fenced()
    assert Run.objects.get(pk=stale.pk).turn == 0


def test_the_reconciler_fences_out_the_holder_it_gives_up_on(queued_run):
    stale = claim_run(queued_run.pk, "worker-a")
    _stall(stale)
    assert handoff.reconcile_runs(grace=30) == [stale.pk]

    # Before any new claim: the stalled holder no longer holds the run.
    assert one_turn(stale)[1] == Fenced()
    assert Run.objects.get(pk=stale.pk).epoch == stale.epoch + 1


def test_the_claim_that_honours_a_cancel_fences_out_the_holder(queued_run):
    stale = claim_run(queued_run.pk, "worker-a")
    assert run_cancel(run=stale).cancel_requested  # the holder's lease is live: asked to stop
    _stall(stale)
    assert claim_run(stale.pk, "worker-b") is None  # the next claim cancels it instead
    cancelled = Run.objects.get(pk=stale.pk)
    assert (cancelled.status, cancelled.epoch) == (RunStatus.CANCELLED, stale.epoch + 1)

    assert one_turn(stale)[1] == Fenced()


def test_every_store_write_under_a_superseded_claim_is_refused(queued_run):
    held = claim_run(queued_run.pk, "worker-a")
    files = DbFileStore(held.session_id, guard=Claim(held.pk, held.epoch).hold)
    files.write("/before.md", "while held")
    _stall(held)
    run_cancel(run=held)

    guard = Claim(held.pk, held.epoch).hold
    with pytest.raises(Superseded):
        files.write("/after.md", "after the cancel")
    with pytest.raises(Superseded):
        files.write("/before.md", "overwritten after the cancel")
    with pytest.raises(Superseded):
        DbMemoryStore(held.agent, guard=guard).write("/memories/AGENTS.md", "late")
    with pytest.raises(Superseded):
        DbSummaryStore(held.session_id, guard=guard).save(Summary(text="late", through_seq=1))

    stored = dict(SessionFile.objects.filter(session_id=held.session_id)
                  .values_list("path", "content"))
    assert stored == {"/before.md": "while held"}
    assert not MemoryFile.objects.filter(agent_id=held.agent_id).exists()
    assert Session.objects.get(pk=held.session_id).summary_seq == 0


class _Gate:
    """A scripted model whose calls wait until the test opens the gate (a model call in flight
    while the worker is stalled)."""

    name = "scripted"

    def __init__(self, *steps) -> None:
        self.inner = ScriptedModel(list(steps))
        self.called = threading.Event()
        self.open = threading.Event()

    def complete(self, request):
        self.called.set()
        assert self.open.wait(10)
        return self.inner.complete(request)


@pytest.mark.django_db(transaction=True)
def test_a_stalled_worker_whose_run_was_cancelled_writes_no_file_and_stops(
        alice, make_session, hango_settings, serve_model, monkeypatch):
    hango_settings(run_inline=False, broker_url="", cancel_poll_seconds=3600)
    monkeypatch.setattr(tasks, "enqueue_run", lambda run_id, **_: None)  # this test is the worker
    gate = _Gate(tool_call("write_file", {"path": "/late.md", "content": "too late"},
                           call_id="w1"),
                 text("done"))
    serve_model("scripted", gate)
    session = Session.objects.get(pk=make_session(alice)["id"])
    _, run = message_post(session=session, content="write it")
    outcome: list[Outcome] = []

    def work() -> None:
        try:
            outcome.append(worker.execute_run(str(run.pk), owner="worker-a"))
        finally:
            connection.close()

    thread = threading.Thread(target=work)
    thread.start()
    assert gate.called.wait(10)  # the model call is in flight; the worker stalls past its lease
    _stall(run)
    cancelled = run_cancel(run=run)
    assert cancelled.status == RunStatus.CANCELLED
    events = RunEvent.objects.filter(run=run).count()
    gate.open.set()  # the worker wakes up with the model's answer: a write_file call
    thread.join(20)

    assert outcome == [Outcome.FENCED]
    assert not SessionFile.objects.filter(session=session).exists()
    assert RunEvent.objects.filter(run=run).count() == events
    assert Message.objects.filter(session=session).count() == 1
    final = Run.objects.get(pk=run.pk)
    assert (final.status, final.turn) == (RunStatus.CANCELLED, 0)


@pytest.mark.postgresql(reason="PostgreSQL's idle_in_transaction_session_timeout")
def test_every_connection_is_bounded_in_how_long_it_may_sit_inside_a_transaction(db):
    with connection.cursor() as cursor:
        cursor.execute("SHOW idle_in_transaction_session_timeout")
        assert cursor.fetchone()[0] == "10s"  # HANGO_DATABASE_IDLE_IN_TRANSACTION_SECONDS


@pytest.mark.postgresql(reason="PostgreSQL's idle_in_transaction_session_timeout")
@pytest.mark.django_db(transaction=True)
def test_a_holder_stopped_inside_its_write_blocks_a_cancel_only_until_postgresql_ends_it(
        alice, make_session, hango_settings, monkeypatch):
    hango_settings(run_inline=False, broker_url="")
    monkeypatch.setattr(tasks, "enqueue_run", lambda run_id, **_: None)
    session = Session.objects.get(pk=make_session(alice)["id"])
    _, run = message_post(session=session, content="hi")
    held = claim_run(run.pk, "worker-a")
    locked, resumed = threading.Event(), threading.Event()
    outcome: list[BaseException] = []

    def stalled_write() -> None:
        try:
            with connection.cursor() as cursor:  # this thread's own connection, as configured
                cursor.execute("SET idle_in_transaction_session_timeout = '1s'")  # the test's 10
            guard = Claim(held.pk, held.epoch).hold
            with transaction.atomic():
                guard()  # the row is locked; the process stops before its write
                locked.set()
                resumed.wait(10)
                SessionFile.objects.create(session=session, path="/late.md", content="late")
        except Exception as exc:  # the server ended the session meanwhile
            outcome.append(exc)
        finally:
            connection.close()

    _stall(held)  # past its lease, inside the write's transaction
    thread = threading.Thread(target=stalled_write)
    thread.start()
    assert locked.wait(10)
    began = time.monotonic()
    assert run_cancel(run=held).status == RunStatus.CANCELLED  # waited for the lock
    waited = time.monotonic() - began
    resumed.set()
    thread.join(10)
    assert 0.5 < waited < 5, waited
    assert outcome and isinstance(outcome[0], DatabaseError)
    assert not SessionFile.objects.filter(session=session).exists()
