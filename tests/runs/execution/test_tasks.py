"""Handing runs to the broker: a send the broker refuses is logged and left to the reconciler,
never raised; a reconciler pass that cannot send changes nothing (a private Redis, PostgreSQL)."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from hango_project.celery import app as celery_app
from runs import signals
from runs.execution import tasks
from runs.execution.worker import MAY_HAVE_ENDED, Outcome, claim_run
from runs.models import Run, RunStatus
from tests.support.broker import queued_tasks


def test_a_run_s_end_tells_the_kind_of_its_session(queued_run):
    told: list[dict] = []

    def receiver(sender, **kwargs) -> None:
        told.append(kwargs)

    signals.run_may_have_ended.connect(receiver)
    try:
        # Ended, however (a starved in-process run may find its lease gone, as in test_queue).
        assert tasks.advance_run(str(queued_run.pk)) in MAY_HAVE_ENDED
        assert tasks.advance_run(str(queued_run.pk)) == Outcome.SKIPPED  # delivered twice
    finally:
        signals.run_may_have_ended.disconnect(receiver)
    # The claim read the session: its kind. A claim that took nothing read none.
    assert [(t["run_id"], t["session_kind"]) for t in told] == [
        (str(queued_run.pk), "chat"), (str(queued_run.pk), None)]


@pytest.mark.slow
def test_a_reconciler_pass_that_cannot_send_leaves_the_runs_for_the_next_pass(
        queued_run, private_broker, hango_settings, caplog):
    claim_run(queued_run.pk, "worker-gone")
    expired = timezone.now() - timedelta(seconds=5)
    Run.objects.filter(pk=queued_run.pk).update(lease_expires_at=expired)

    call_command("hango_reconcile")  # the broker is down
    run = Run.objects.get(pk=queued_run.pk)
    # Not marked as handled: the next pass picks it again at once, not a grace period later.
    assert (run.lease_owner, run.lease_expires_at) == ("worker-gone", expired)
    assert f"run {queued_run.pk} was not sent" in caplog.text
    assert private_broker.password not in caplog.text

    private_broker.start()
    call_command("hango_reconcile")
    run = Run.objects.get(pk=queued_run.pk)
    assert run.lease_expires_at is None and run.lease_owner == ""
    assert queued_tasks(private_broker.url) == 1


@pytest.mark.slow
def test_a_yielded_run_the_broker_will_not_take_is_left_for_the_reconciler(
        queued_run, private_broker, hango_settings, django_capture_on_commit_callbacks):
    hango_settings(run_slice_seconds=0, reconcile_grace_seconds=0)
    with django_capture_on_commit_callbacks(execute=True):
        assert tasks.advance_run(str(queued_run.pk)) == Outcome.YIELDED  # the send fails
    run = Run.objects.get(pk=queued_run.pk)
    assert run.status == RunStatus.RUNNING and run.lease_expires_at is None

    private_broker.start()
    call_command("hango_reconcile")
    assert queued_tasks(private_broker.url) == 1


@pytest.mark.slow
def test_a_run_the_reconciler_recovers_is_taken_before_the_runs_already_queued(
        queued_run, private_broker, hango_settings):
    private_broker.start()
    waiting = [str(uuid.uuid4()) for _ in range(3)]
    for run_id in waiting:
        assert tasks.send_run(run_id)
    claim_run(queued_run.pk, "worker-gone")
    Run.objects.filter(pk=queued_run.pk).update(lease_expires_at=timezone.now() - timedelta(1))
    assert tasks.reconcile() == 1
    # In the order a worker consuming the run queue gets them.
    with celery_app.connection_for_read() as connection:
        order = [connection.default_channel.basic_get("runs", no_ack=True).decode()[0][0]
                 for _ in range(4)]
    assert order == [str(queued_run.pk), *waiting]


@pytest.mark.slow
def test_a_pass_takes_many_stranded_runs_in_short_batches_and_sends_them_all(
        alice, make_session, private_broker, hango_settings, monkeypatch):
    from runs.execution import handoff
    from runs.intake.services import message_post
    from runs.models import Session

    hango_settings(reconcile_grace_seconds=0)
    private_broker.start()
    monkeypatch.setattr(handoff, "RECONCILE_BATCH", 2)
    monkeypatch.setattr(tasks, "enqueue_run", lambda run_id, **_: None)  # their tasks never came
    batches: list[int] = []
    taken = handoff.reconcile_runs
    monkeypatch.setattr(handoff, "reconcile_runs",
                        lambda **kw: batches.append(len(ids := taken(**kw))) or ids)
    for _ in range(5):
        message_post(session=Session.objects.get(pk=make_session(alice)["id"]), content="hi")
    Run.objects.update(updated_at=timezone.now() - timedelta(seconds=5))
    assert tasks.reconcile() == 0  # missed once: maybe between the list and a reservation
    assert tasks.reconcile() == 5  # missed twice: lost
    assert batches == [0, 2, 2, 1] and queued_tasks(private_broker.url) == 5
