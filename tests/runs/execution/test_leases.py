"""The run watch's leases (runs/execution/leases.py, runs/execution/renewer.py): every held run
renewed by one statement on PostgreSQL (by the ORM's two in one transaction on SQLite), a run whose
lease was lost named, a take-over counted and written as a run event, and renewals that go on while
the runs' greenlets keep the CPU."""

from __future__ import annotations

import subprocess
import sys
import time
from datetime import timedelta
from typing import Any

import psycopg2
import psycopg2.extensions
import pytest
from django.db import connection, transaction
from django.utils import timezone

from harness import telemetry as t
from runs.execution import handoff, tasks
from runs.execution.events import EVENT_LEASE_TAKEN_OVER, timestamp
from runs.execution.renewer import OrmStatements, PostgreSQLStatements
from runs.execution.store import postgresql
from runs.execution.worker import claim_run
from runs.intake.services import message_post
from runs.models import Run, RunEvent, RunStatus, Session
from tests.support.api import started_run
from tests.support.otel import metric_reader, metric_sum
from tests.support.runs import wait_for_run
from tests.support.workers import ROOT, worker_environment

ONE_STATEMENT = pytest.mark.postgresql(reason="the watch's one-statement renewal")


class _Counted(psycopg2.extensions.connection):
    """A connection that keeps every statement its cursors send."""

    sent: list[str] = []

    def cursor(self, *args: Any, **kwargs: Any) -> Any:
        return super().cursor(*args, cursor_factory=_CountedCursor, **kwargs)


class _CountedCursor(psycopg2.extensions.cursor):
    def execute(self, query: Any, vars: Any = None) -> Any:  # noqa: A002 (the driver's name)
        _Counted.sent.append(str(query))
        return super().execute(query, vars)


@pytest.fixture
def by_hand(monkeypatch, hango_settings):
    hango_settings(run_inline=False, broker_url="")
    monkeypatch.setattr(tasks, "enqueue_run", lambda run_id, **_: None)


def claimed(caller, make_session, count: int, owner: str = "worker-a") -> list[Run]:
    runs = []
    for _ in range(count):
        _, run = message_post(session=Session.objects.get(pk=make_session(caller)["id"]),
                              content="hi")
        runs.append(claim_run(run.pk, owner))
    return runs


@ONE_STATEMENT
@pytest.mark.django_db(transaction=True)
def test_every_held_run_is_renewed_by_one_statement(alice, make_session, by_hand):
    runs = claimed(alice, make_session, 60)
    statements = PostgreSQLStatements({**connection.get_connection_params(),
                                       "connection_factory": _Counted})
    until = timezone.now() + timedelta(minutes=5)
    _Counted.sent.clear()
    try:
        lost = statements.renew([(r.pk, r.epoch) for r in runs], until, lock_wait=0.1)
    finally:
        statements.close()
    assert lost == set() and len(_Counted.sent) == 1
    assert set(Run.objects.values_list("lease_expires_at", flat=True)) == {until}


@ONE_STATEMENT
@pytest.mark.django_db(transaction=True)
def test_a_run_taken_over_is_lost_and_one_locked_elsewhere_is_not(alice, make_session, by_hand):
    taken, locked, kept = claimed(alice, make_session, 3)
    Run.objects.filter(pk=taken.pk).update(epoch=taken.epoch + 1)
    blocker = psycopg2.connect(**connection.get_connection_params())
    statements = PostgreSQLStatements(connection.get_connection_params())
    until = timezone.now() + timedelta(minutes=5)
    try:  # another transaction holds a row past the renewal's short wait
        blocker.cursor().execute("SELECT 1 FROM runs WHERE id = %s FOR UPDATE", [str(locked.pk)])
        lost = statements.renew([(r.pk, r.epoch) for r in (taken, locked, kept)], until,
                                lock_wait=0.1)
    finally:
        blocker.rollback()
        blocker.close()
        statements.close()
    assert lost == {(taken.pk, taken.epoch)}
    leases = dict(Run.objects.values_list("pk", "lease_expires_at"))
    assert leases[kept.pk] == until
    assert leases[taken.pk] == taken.lease_expires_at  # not renewed: not the holder's
    assert leases[locked.pk] == locked.lease_expires_at  # the next beat renews it


@pytest.mark.django_db(transaction=True)
def test_the_orm_renewal_renews_the_held_runs_and_names_the_lost(alice, make_session, by_hand):
    kept, taken = claimed(alice, make_session, 2)
    Run.objects.filter(pk=taken.pk).update(epoch=taken.epoch + 1)
    until = timezone.now() + timedelta(minutes=5)
    lost = OrmStatements().renew([(kept.pk, kept.epoch), (taken.pk, taken.epoch)], until,
                                 lock_wait=0.1)
    assert lost == {(taken.pk, taken.epoch)}
    leases = dict(Run.objects.values_list("pk", "lease_expires_at"))
    assert (leases[kept.pk], leases[taken.pk]) == (until, taken.lease_expires_at)


def _takeovers(run: Run) -> list[dict[str, Any]]:
    return list(RunEvent.objects.filter(run=run, type=EVENT_LEASE_TAKEN_OVER)
                .order_by("seq").values_list("data", flat=True))


@pytest.mark.parametrize("path", [pytest.param("one statement", marks=ONE_STATEMENT), "orm"])
@pytest.mark.django_db(transaction=True)
def test_a_claim_that_takes_an_expired_lease_counts_it_and_says_so(alice, make_session, by_hand,
                                                                    monkeypatch, path):
    if path == "orm":  # the one-statement claim declines: the ORM path decides
        monkeypatch.setattr(postgresql, "claim_unheld", lambda *args: None)
    metric_reader()
    [stale] = claimed(alice, make_session, 1, owner="host:1:1")
    expired = timezone.now() - timedelta(seconds=1)
    Run.objects.filter(pk=stale.pk).update(lease_expires_at=expired)
    before = metric_sum(t.METRIC_LEASE_TAKEOVERS, **{t.ATTR_TAKEOVER_BY: "claim"})
    run = claim_run(stale.pk, "host:2:1")
    assert run is not None and run.epoch == stale.epoch + 1
    assert metric_sum(t.METRIC_LEASE_TAKEOVERS, **{t.ATTR_TAKEOVER_BY: "claim"}) == before + 1
    [event] = _takeovers(run)
    assert event == {"from_worker": "host:1:1", "from_epoch": stale.epoch,
                     "to_worker": "host:2:1", "epoch": stale.epoch + 1, "by": "claim",
                     "lease_expired_at": timestamp(expired)}
    # The run's events stay in order, the status event of its first claim before it.
    seqs = list(RunEvent.objects.filter(run=run).order_by("seq").values_list("seq", flat=True))
    assert seqs == list(range(1, len(seqs) + 1)) and seqs[-1] == run.event_seq
    # Its own holder claiming again (a task's retry) takes nothing over.
    Run.objects.filter(pk=run.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    assert claim_run(run.pk, "host:2:1") is not None and len(_takeovers(run)) == 1


@pytest.mark.django_db(transaction=True)
def test_a_reconciler_take_over_counts_it_and_says_so(alice, make_session, by_hand):
    metric_reader()
    [stale] = claimed(alice, make_session, 1, owner="host:1:1")
    Run.objects.filter(pk=stale.pk).update(lease_expires_at=timezone.now() - timedelta(1))
    before = metric_sum(t.METRIC_LEASE_TAKEOVERS, **{t.ATTR_TAKEOVER_BY: "reconciler"})
    assert handoff.reconcile_runs(grace=30) == [stale.pk]
    assert metric_sum(t.METRIC_LEASE_TAKEOVERS,
                      **{t.ATTR_TAKEOVER_BY: "reconciler"}) == before + 1
    [event] = _takeovers(stale)
    assert (event["from_worker"], event["to_worker"], event["by"]) == ("host:1:1", "",
                                                                       "reconciler")
    assert event["epoch"] == stale.epoch + 1
    # The next claim takes a run nobody holds: not a second take-over.
    assert claim_run(stale.pk, "host:2:1") is not None and len(_takeovers(stale)) == 1


@pytest.mark.slow
@ONE_STATEMENT
@pytest.mark.django_db(transaction=True)
def test_a_gevent_process_whose_greenlets_keep_the_cpu_still_renews(alice, make_session,
                                                                     by_hand, hango_settings):
    hango_settings(run_lease_seconds=1.5)  # a beat: 0.5 s
    runs = claimed(alice, make_session, 20, owner="starved")
    env = worker_environment("redis://127.0.0.1:1/0", {"HANGO_RUN_LEASE_SECONDS": "1.5"})
    hog = subprocess.Popen([sys.executable, "-m", "tests.support.starved_watch", "5",
                            *(str(r.pk) for r in runs)], cwd=ROOT, env=env,
                           stdout=subprocess.PIPE, text=True)
    try:
        assert hog.stdout is not None and hog.stdout.readline().strip() == "holding"
        # As fresh as a claim's (the process took a while to start); renewed from here on.
        Run.objects.filter(lease_owner="starved").update(
            lease_expires_at=timezone.now() + timedelta(seconds=1.5))
        started, lapsed = time.monotonic(), []
        while time.monotonic() - started < 5:  # the spinning: more than three leases
            oldest = min(Run.objects.filter(pk__in=[r.pk for r in runs])
                         .values_list("lease_expires_at", flat=True))
            if oldest <= timezone.now():
                lapsed.append(time.monotonic() - started)
            time.sleep(0.1)
        out, _ = hog.communicate(timeout=30)
    finally:
        hog.kill()
    assert hog.returncode == 0 and out.strip() == "superseded: 0"
    assert lapsed == []
    assert not Run.objects.exclude(status=RunStatus.RUNNING).filter(pk__in=[r.pk for r in runs])


@pytest.mark.slow
@ONE_STATEMENT
def test_a_worker_keeps_its_lease_through_long_calls_and_stops_once_taken_over(
        alice, make_agent, start_worker):
    metric_reader()
    w1 = start_worker("w1", HANGO_RUN_LEASE_SECONDS="1.5", HANGO_SCRIPTED_DELAY_MS="2500")
    _, run_id = started_run(alice, make_agent, "scripted:workload-3", "Run the task.")
    first = wait_for_run(run_id, lambda r: r.status == RunStatus.RUNNING)
    time.sleep(3.5)  # past two leases, inside its second model call: renewed meanwhile
    held = Run.objects.get(pk=run_id)
    assert (held.epoch, held.lease_owner) == (first.epoch, first.lease_owner)
    assert held.lease_expires_at > timezone.now()
    with transaction.atomic():  # another worker finds the lease expired, and claims the run
        Run.objects.filter(pk=run_id).update(lease_expires_at=timezone.now() - timedelta(1))
        taken = claim_run(run_id, "elsewhere:1:1")
    assert taken is not None and taken.epoch == first.epoch + 1
    w1.wait_for(lambda log: "'fenced'" in log, what="the slice fenced", timeout=30)
    assert w1.task_results() == ["fenced"]
    after = Run.objects.get(pk=run_id)
    assert (after.turn, after.epoch, after.lease_owner) == (taken.turn, taken.epoch,
                                                            "elsewhere:1:1")
    [event] = _takeovers(after)
    assert event["from_worker"] == first.lease_owner
    assert int(first.lease_owner.split(":")[1]) in w1.processes()  # a live worker's
