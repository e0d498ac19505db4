"""Fixtures of the run tests: a run queued in this process's way, streams that follow its live
channel, and two runs made alike for the tests that compare a write's two paths."""

from __future__ import annotations

import pytest

from accounts.models import Tenant, UsageRecord
from runs.execution import tasks
from runs.execution.worker import claim_run
from runs.intake.services import message_post
from runs.models import Run, Session
from tests.support.api import make_caller

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


QUOTA = 10**12
EARLIER = 1_000  # spent by each tenant before the turn, so the reported spend must include it


@pytest.fixture
def twin_runs(tenant, other_tenant, make_session, hango_settings,
              monkeypatch) -> tuple[Run, Run]:
    """Two runs made alike and claimed once (same turn, epoch, event_seq and lease owner), one
    per tenant so that neither run's usage counts towards the other's quota. Nothing executes
    them but the test."""
    hango_settings(run_inline=False, broker_url="")
    monkeypatch.setattr(tasks, "enqueue_run", lambda run_id, **_: None)
    runs = []
    for owner_tenant, email in ((tenant, "alice@acme.test"), (other_tenant, "carol@globex.test")):
        Tenant.objects.filter(pk=owner_tenant.pk).update(token_quota=QUOTA)
        UsageRecord.objects.create(tenant=owner_tenant, purpose="run", provider="scripted",
                                   model="demo", input_tokens=EARLIER,
                                   dedupe_key=f"earlier:{owner_tenant.pk}")
        session = Session.objects.get(pk=make_session(make_caller(owner_tenant, email))["id"])
        _, queued = message_post(session=session, content="hi")
        run = claim_run(queued.pk, "worker-a")
        assert run is not None
        runs.append(run)
    # The claims' clocks differ; nothing else does.
    Run.objects.filter(pk__in=[r.pk for r in runs]).update(
        lease_expires_at=runs[0].lease_expires_at)
    return runs[0], runs[1]
