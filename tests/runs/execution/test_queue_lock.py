"""The session's lock and the read of its active run, in one round trip
(:func:`runs.execution.queue.locked_active_run`): a post that waited for the lock sees the run
the holder made active before it let go, never a snapshot from before it waited."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, connections, transaction

from runs.execution import queue
from runs.models import Run, RunStatus, Session


def _waiting_for_a_lock() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' "
                       "AND NOT granted")
        return cursor.fetchone()[0] > 0


@pytest.mark.django_db(transaction=True)
def test_a_post_that_waited_for_the_lock_sees_the_run_made_active_meanwhile(
        alice, make_session, hango_settings):
    if connection.vendor != "postgresql":
        pytest.skip("SQLite's write lock: one writer at a time")
    hango_settings(run_inline=False, broker_url="")
    session = Session.objects.get(pk=make_session(alice)["id"])
    seen: list[tuple[Run | None, bool]] = []

    def second_post() -> None:
        try:
            with transaction.atomic():
                seen.append(queue.locked_active_run(session.pk))
        finally:
            connections.close_all()

    with transaction.atomic():
        queue.lock_session(session.pk)
        assert queue.active_run(session.pk) == (None, False)
        run = Run.objects.create(session=session, agent_id=session.agent_id,
                                 status=RunStatus.QUEUED)
        waiter = threading.Thread(target=second_post)
        waiter.start()
        while not _waiting_for_a_lock():
            waiter.join(0.05)
    waiter.join()
    assert seen == [(run, False)]
