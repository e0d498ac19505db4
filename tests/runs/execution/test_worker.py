"""Leases and fencing at the service level: two claimers, one commit."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import psycopg2
import pytest
from django.db import OperationalError, connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from hango_project.pgpool.base import pools
from harness.providers.scripted import named_script
from runs.execution import tasks, worker
from runs.execution.assembly import build_execution
from runs.execution.checkpointer import DbCheckpointer, DbControl, Fenced
from runs.execution.fence import Claim
from runs.execution.leases import LeaseKeeper
from runs.execution.timings import RunTimings
from runs.execution.worker import Outcome, claim_run
from runs.intake.services import message_post
from runs.models import Message, Run, RunStatus, Session
from tests.support.runs import one_turn, timings


def test_a_second_claim_is_refused_while_the_lease_is_live(queued_run):
    first = claim_run(queued_run.pk, "worker-a")
    assert first is not None and first.status == RunStatus.RUNNING and first.epoch == 1
    assert claim_run(queued_run.pk, "worker-b") is None


def test_a_fenced_out_worker_commits_nothing(queued_run):
    stale = claim_run(queued_run.pk, "worker-a")
    # worker-a stalls past its lease; worker-b takes over under a new epoch.
    Run.objects.filter(pk=queued_run.pk).update(lease_expires_at=timezone.now() - timedelta(1))
    fresh = claim_run(queued_run.pk, "worker-b")
    assert fresh is not None and fresh.epoch == stale.epoch + 1

    _, halt = one_turn(stale)
    assert halt == Fenced()
    assert Message.objects.filter(session_id=queued_run.session_id).count() == 1
    assert Run.objects.get(pk=queued_run.pk).turn == 0

    _, halt = one_turn(fresh)
    assert halt is None
    assert Message.objects.filter(session_id=queued_run.session_id).count() == 3
    assert Run.objects.get(pk=queued_run.pk).turn == 1


def test_a_turn_already_committed_is_not_committed_again(queued_run):
    run = claim_run(queued_run.pk, "worker-a")
    checkpointer, _ = one_turn(run)
    # Replaying the same turn from the same claim (a duplicate) finds the turn moved on.
    loop, state, _ = build_execution(run)
    state.turn = 0
    given = timings()
    control = DbControl(Claim(run.pk, run.epoch), cancel_poll=given.cancel_poll)
    duplicate = DbCheckpointer(run, control, 2, deadline=float("inf"), lease=given.lease)
    result = loop.turn(state, control)
    assert duplicate.checkpoint(state, result) == Fenced()
    assert Message.objects.filter(session_id=queued_run.session_id).count() == 3


def test_reconciler_reenqueues_only_runs_nobody_advances(queued_run, hango_settings, monkeypatch,
                                                         django_capture_on_commit_callbacks):
    calls = []
    hango_settings(reconcile_grace_seconds=0)
    monkeypatch.setattr(tasks, "enqueue_run", calls.append)
    claim_run(queued_run.pk, "worker-a")
    assert tasks.reconcile() == 0  # leased: somebody is on it
    Run.objects.filter(pk=queued_run.pk).update(lease_expires_at=timezone.now() - timedelta(1))
    with django_capture_on_commit_callbacks(execute=True):
        assert tasks.reconcile() == 1
    assert calls == [queued_run.pk]
    run = Run.objects.get(pk=queued_run.pk)
    assert run.lease_expires_at is None and run.lease_owner == ""
    # The next pass within the grace period leaves it alone: no pile of duplicate tasks.
    hango_settings(reconcile_grace_seconds=60)
    assert tasks.reconcile() == 0


def test_execute_run_finishes_a_claimed_run_and_skips_afterwards(queued_run):
    assert worker.execute_run(str(queued_run.pk)) == Outcome.COMPLETED
    assert worker.execute_run(str(queued_run.pk)) == Outcome.SKIPPED


def test_a_slice_that_runs_out_yields_and_requeues(queued_run, hango_settings, monkeypatch):
    hango_settings(run_slice_seconds=0)
    enqueued = []
    monkeypatch.setattr(tasks, "enqueue_run", enqueued.append)
    assert tasks.advance_run(str(queued_run.pk)) == Outcome.YIELDED
    run = Run.objects.get(pk=queued_run.pk)
    assert run.status == RunStatus.RUNNING and run.turn == 1 and run.lease_expires_at is None
    assert enqueued == [str(queued_run.pk)]
    assert worker.execute_run(str(queued_run.pk)) in (Outcome.YIELDED, Outcome.COMPLETED)


@pytest.fixture
def by_hand(monkeypatch):
    """The runs a test posts are claimed by the test alone: no in-process thread executes them
    when their transaction commits (without a broker, one would)."""
    monkeypatch.setattr(tasks, "enqueue_run", lambda run_id, **_: None)


@pytest.mark.django_db(transaction=True)
def test_the_lease_keeper_renews_the_lease_until_fenced(alice, make_session, hango_settings,
                                                        by_hand):
    hango_settings(run_inline=False, broker_url="")
    given = timings(run_lease_seconds=0.9)  # a beat: 0.3 s
    session = make_session(alice)
    _, run = message_post(session=Session.objects.get(pk=session["id"]), content="hi")
    claimed = claim_run(run.pk, "worker-a", lease=given.lease)
    first = claimed.lease_expires_at
    control = DbControl(Claim(claimed.pk, claimed.epoch), cancel_poll=given.cancel_poll)
    with LeaseKeeper(claimed, control, given):
        time.sleep(0.5)
        renewed = Run.objects.get(pk=run.pk).lease_expires_at
        assert renewed is not None and renewed > first and not control.superseded
        Run.objects.filter(pk=run.pk).update(epoch=claimed.epoch + 1)  # somebody took over
        time.sleep(0.4)
        after = Run.objects.get(pk=run.pk).lease_expires_at
        time.sleep(0.4)
        assert Run.objects.get(pk=run.pk).lease_expires_at == after  # it stopped renewing
        assert control.superseded and control.cancel_requested()  # and the loop stops


def claimed_runs(caller, make_session, count: int, given: RunTimings,
                 ) -> tuple[list[Run], list[DbControl]]:
    """``count`` runs of new sessions, claimed by one worker with ``given`` timings, and a
    control for each."""
    claimed = []
    for _ in range(count):
        _, run = message_post(session=Session.objects.get(pk=make_session(caller)["id"]),
                              content="hi")
        claimed.append(claim_run(run.pk, "worker-a", lease=given.lease))
    return claimed, [DbControl(Claim(c.pk, c.epoch), cancel_poll=given.cancel_poll)
                     for c in claimed]


@pytest.mark.postgresql(reason="counts the watch's prepared statements")
@pytest.mark.django_db(transaction=True)
def test_one_thread_renews_every_lease_of_the_process(alice, make_session, hango_settings,
                                                     by_hand):
    hango_settings(run_inline=False, broker_url="")
    given = timings(run_lease_seconds=0.3)
    claimed, controls = claimed_runs(alice, make_session, 3, given)
    first = {c.pk: c.lease_expires_at for c in claimed}
    with LeaseKeeper(claimed[0], controls[0], given):
        threads = threading.active_count()
        with LeaseKeeper(claimed[1], controls[1], given), \
                LeaseKeeper(claimed[2], controls[2], given):
            assert threading.active_count() == threads  # no thread per run
            Run.objects.filter(pk=claimed[1].pk).update(epoch=claimed[1].epoch + 1)
            time.sleep(0.5)
            leases = dict(Run.objects.values_list("pk", "lease_expires_at"))
            assert leases[claimed[0].pk] > first[claimed[0].pk]
            assert leases[claimed[2].pk] > first[claimed[2].pk]
            assert leases[claimed[1].pk] == first[claimed[1].pk]  # taken over: not renewed
            assert [c.superseded for c in controls] == [False, True, False]
    time.sleep(0.2)
    # Idle, the renewing thread holds no connection: every one but this thread's is in its pool.
    connection.ensure_connection()
    assert sum(pool.stats().lent for pool in pools()) == 1


@pytest.mark.postgresql(reason="a row lock another connection holds; its lock_timeout")
@pytest.mark.django_db(transaction=True)
def test_a_renewal_waiting_for_a_locked_row_does_not_hold_up_the_others(alice, make_session,
                                                                         hango_settings,
                                                                         by_hand):
    hango_settings(run_inline=False, broker_url="")
    given = timings(run_lease_seconds=0.9)  # a beat: 0.3 s
    claimed, controls = claimed_runs(alice, make_session, 2, given)
    first = {c.pk: c.lease_expires_at for c in claimed}
    blocker = psycopg2.connect(**connection.get_connection_params())
    try:  # another transaction holds the first run's row
        blocker.cursor().execute("SELECT 1 FROM runs WHERE id = %s FOR UPDATE",
                                 [str(claimed[0].pk)])
        with LeaseKeeper(claimed[0], controls[0], given), \
                LeaseKeeper(claimed[1], controls[1], given):
            time.sleep(0.8)
            leases = dict(Run.objects.values_list("pk", "lease_expires_at"))
            assert leases[claimed[1].pk] > first[claimed[1].pk]  # renewed all the same
            assert leases[claimed[0].pk] == first[claimed[0].pk]
            assert not controls[0].superseded  # a renewal missed is not a takeover
    finally:
        blocker.rollback()
        blocker.close()


@pytest.mark.django_db(transaction=True)
def test_the_watch_reads_every_held_run_s_cancel_in_one_statement(alice, make_session,
                                                                   hango_settings, by_hand):
    hango_settings(run_inline=False, broker_url="")
    given = timings(cancel_poll_seconds=0.2)
    claimed, controls = claimed_runs(alice, make_session, 3, given)
    with LeaseKeeper(claimed[0], controls[0], given), \
            LeaseKeeper(claimed[1], controls[1], given), \
            LeaseKeeper(claimed[2], controls[2], given):
        Run.objects.filter(pk=claimed[0].pk).update(cancel_requested=True)
        Run.objects.filter(pk=claimed[1].pk).update(epoch=claimed[1].epoch + 1)  # taken over
        time.sleep(0.4)  # two of the watch's reads
        # What each run's loop checks is already known: none reads its own row.
        with CaptureQueriesContext(connection) as queries:
            seen = [c.cancel_requested() for c in controls]
        assert seen == [True, True, False] and not queries.captured_queries
        assert [c.superseded for c in controls] == [False, True, False]
        assert not controls[2].flag


@pytest.mark.postgresql(reason="counts the watch's prepared statements")
@pytest.mark.django_db(transaction=True)
def test_a_run_reads_its_own_cancel_when_the_watch_has_not(alice, make_session,
                                                           hango_settings, by_hand):
    hango_settings(run_inline=False, broker_url="")
    _, run = message_post(session=Session.objects.get(pk=make_session(alice)["id"]),
                          content="hi")
    claimed = claim_run(run.pk, "worker-a")
    control = DbControl(Claim(claimed.pk, claimed.epoch),  # not watched: no LeaseKeeper
                        cancel_poll=0.05)
    Run.objects.filter(pk=claimed.pk).update(cancel_requested=True)
    time.sleep(0.1)
    with CaptureQueriesContext(connection) as queries:
        assert control.cancel_requested()
    assert [q["sql"].split()[:2] for q in queries.captured_queries][-1] == ["EXECUTE",
                                                                           "hango_poll"]


class _DatabaseGoneOnce:
    """A model whose first call finds the database gone (as a PostgreSQL restart mid-call)."""

    name = "scripted"

    def __init__(self) -> None:
        self.inner = named_script("demo")
        self.failed = False

    def complete(self, request):
        if not self.failed:
            self.failed = True
            raise OperationalError("server closed the connection unexpectedly")
        return self.inner.complete(request)


def test_a_run_that_lost_its_database_is_not_failed_and_its_retry_continues(queued_run,
                                                                            serve_model):
    serve_model("scripted", _DatabaseGoneOnce())
    with pytest.raises(OperationalError):  # for the task's retry (autoretry_for)
        worker.execute_run(str(queued_run.pk), owner="worker-a")
    run = Run.objects.get(pk=queued_run.pk)
    assert (run.status, run.error, run.lease_owner) == (RunStatus.RUNNING, None, "worker-a")

    # The retry, in the same worker, claims it again at once; another worker would wait for
    # the lease (and the reconciler) instead.
    assert worker.execute_run(str(queued_run.pk), owner="worker-b") is Outcome.SKIPPED
    assert worker.execute_run(str(queued_run.pk), owner="worker-a") is Outcome.COMPLETED


def test_a_forked_child_starts_with_a_watch_of_its_own():
    from runs.execution import leases

    before = leases._watch
    leases._forget_in_child()
    try:
        assert leases._watch is not before
    finally:
        leases._watch = before
