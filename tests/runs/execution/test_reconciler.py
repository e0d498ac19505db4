"""The reconciler's thread: a pass as it starts, then one per interval, until stopped; a pass
leaves alone a run whose task waits in the queue (a private Redis, PostgreSQL)."""

from __future__ import annotations

import time
import uuid
from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.utils import timezone

from hango_project.celery import app as celery_app
from runs.execution import tasks
from runs.execution.queued_tasks import keeper, waiting_runs
from runs.execution.reconciler import ReconcilerThread
from runs.execution.worker import claim_run
from runs.intake.services import message_post
from runs.models import Run, Session
from tests.support.broker import queued_tasks
from tests.support.runs import wait_for_run


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_thread_reconciles_at_once_and_on_every_interval_until_stopped(
        alice, make_session, private_broker):
    session = Session.objects.get(pk=make_session(alice)["id"])
    _, run = message_post(session=session, content="hi")  # not sent: the broker is still down
    private_broker.start()
    claim_run(run.pk, "worker-gone")
    Run.objects.filter(pk=run.pk).update(lease_expires_at=timezone.now() - timedelta(1))
    thread = ReconcilerThread(0.2, stop_wait=7)
    started = time.monotonic()
    thread.start()
    try:
        wait_for_run(run.pk, lambda r: r.lease_owner == "", timeout=5)
        assert time.monotonic() - started < 1  # the first pass does not wait an interval
        assert queued_tasks(private_broker.url) == 1
        # Stranded again (its new worker died too): the next pass, an interval later, sends it.
        claim_run(run.pk, "worker-gone-too")
        Run.objects.filter(pk=run.pk).update(
            lease_expires_at=timezone.now() - timedelta(1))
        wait_for_run(run.pk, lambda r: r.lease_owner == "", timeout=5)
        assert queued_tasks(private_broker.url) == 2
    finally:
        thread.stop()
    assert not thread._thread.is_alive()


def test_an_interval_must_be_positive():
    with pytest.raises(ValueError, match="positive"):
        ReconcilerThread(0, stop_wait=7)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_pass_sends_again_only_the_queued_run_whose_task_the_queue_does_not_hold(
        alice, make_session, private_broker):
    lost = message_post(session=Session.objects.get(pk=make_session(alice)["id"]),
                        content="sent while the broker was down")[1]
    private_broker.start()
    waiting = message_post(session=Session.objects.get(pk=make_session(alice)["id"]),
                           content="sent, and waiting behind a backlog")[1]
    assert queued_tasks(private_broker.url) == 1
    long_ago = timezone.now() - timedelta(hours=1)  # both far past the grace period
    Run.objects.filter(pk__in=[lost.pk, waiting.pk]).update(updated_at=long_ago)
    # Missed by one pass, the lost run's task may be between the list and its worker's
    # reservation: the next pass looks again, and sends it when it misses it too.
    assert tasks.reconcile() == 0
    assert queued_tasks(private_broker.url) == 1
    assert tasks.reconcile() == 1
    assert queued_tasks(private_broker.url) == 2  # the lost run's task, sent again
    assert Run.objects.get(pk=waiting.pk).updated_at == long_ago  # untouched
    assert Run.objects.get(pk=lost.pk).updated_at > long_ago


@pytest.mark.slow
def test_a_reservation_is_waiting_while_recent_and_a_waiting_task_keeps_it_so(private_broker):
    private_broker.start()
    run_id = uuid.uuid4()
    tasks.send_run(str(run_id))
    assert run_id in waiting_runs(30)  # in the queue
    with celery_app.connection_for_write() as conn:
        channel = conn.default_channel
        reserved = channel.basic_get("runs", no_ack=False)  # as a worker reserves it
        assert run_id in waiting_runs(30)  # reserved just now
        client = channel.client
        client.zadd(channel.unacked_index_key, {reserved.delivery_tag: time.time() - 60})
        assert run_id not in waiting_runs(30)  # its worker may be dead
        keep = keeper(SimpleNamespace(properties=reserved.properties), 10)  # a task's request
        assert keep is not None
        keep()  # what the task does while it waits to start; its process renews it soon
        deadline = time.monotonic() + 20
        while run_id not in waiting_runs(30):
            assert time.monotonic() < deadline, "the reservation was not renewed"
            time.sleep(0.2)
        reserved.ack()
    assert run_id not in waiting_runs(30)
    assert keeper(SimpleNamespace(properties={}), 10) is None  # run eagerly
