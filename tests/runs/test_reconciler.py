"""The reconciler's thread: a pass as it starts, then one per interval, until stopped (a private
Redis, PostgreSQL)."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.utils import timezone

from runs.models import Run, Session
from runs.reconciler import ReconcilerThread
from runs.services import message_post
from runs.worker import claim_run
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
    thread = ReconcilerThread(0.2)
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
        ReconcilerThread(0)
