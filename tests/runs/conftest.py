"""Fixtures of the run stream tests: a run queued in this process's way, and streams that
follow its live channel."""

from __future__ import annotations

import pytest

from runs.models import Run, Session
from runs.services import message_post

POLL = 0.05


@pytest.fixture
def in_process(broker, hango_settings, transactional_db):
    """Deltas through this process (the quickstart's way); runs are sent to the suite's Redis,
    where no worker takes them: each test executes its run itself."""
    hango_settings(live_redis_url="", event_poll_seconds=POLL)


@pytest.fixture
def waiting_run(alice, make_session, in_process) -> Run:
    """A queued run nobody takes (its task waits in Redis): the test executes it."""
    session = make_session(alice)
    _, run = message_post(session=Session.objects.get(pk=session["id"]), content="hi there")
    return run


@pytest.fixture
def marked(waiting_run, hango_settings) -> Run:
    """The waiting run, its streams following a live channel, as in the quickstart (no broker:
    its runs execute in this process, which sees their markers), reading on a marker or every
    5 s should one be lost."""
    hango_settings(broker_url="", event_live_poll_seconds=5)
    return waiting_run
