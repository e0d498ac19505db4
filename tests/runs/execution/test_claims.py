"""Claiming a run: the one-statement claim and the ORM claim write the same rows, and the
ids a turn writes are version 7 UUIDs ordered by time."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts.models import QuotaHold, Tenant
from hango_project.ids import time_ordered_uuid
from runs.execution import tasks, worker
from runs.execution.store import pg_claim
from runs.execution.store.orm import OrmStore
from runs.execution.timings import current
from runs.intake.services import message_post
from runs.models import Message, Run, Session
from tests.runs.conftest import QUOTA
from tests.runs.execution.test_turn_commit import LEASE, ONE_STATEMENT, STATE, _rows
from tests.support.api import make_caller

pytestmark = pytest.mark.django_db(transaction=True)


def test_ids_are_version_7_and_sort_by_time():
    earlier = time_ordered_uuid()
    time.sleep(0.002)
    later = [time_ordered_uuid() for _ in range(100)]
    assert {i.version for i in [earlier, *later]} == {7}
    assert all(earlier < i for i in later)
    assert len(set(later)) == len(later)


def test_the_rows_a_turn_indexes_by_id_get_time_ordered_ids(queued_run):
    message = Message.objects.filter(run=queued_run).get()
    for made in (queued_run.session, queued_run, message):
        assert made.pk.version == 7, made


def _orm_claim(run_id: uuid.UUID, owner: str) -> Run | None:
    """claim_run by its ORM path alone (as on SQLite)."""
    return OrmStore().claim(run_id, owner, current().lease)


@pytest.fixture
def twin_queued(tenant, other_tenant, make_session, hango_settings,
                monkeypatch) -> tuple[Run, Run]:
    """Two queued runs made alike, one per tenant, both tenants with a quota and the run's
    holds left by an earlier claim's call that never committed. Nothing executes them."""
    hango_settings(run_inline=False, broker_url="")
    monkeypatch.setattr(tasks, "enqueue_run", lambda run_id, **_: None)
    runs = []
    for owner_tenant, email in ((tenant, "alice@acme.test"), (other_tenant, "carol@globex.test")):
        Tenant.objects.filter(pk=owner_tenant.pk).update(token_quota=QUOTA)
        session = Session.objects.get(pk=make_session(make_caller(owner_tenant, email))["id"])
        _, queued = message_post(session=session, content="hi")
        QuotaHold.objects.create(tenant=owner_tenant, run=queued, tokens=5,
                                 expires_at=LEASE)
        runs.append(queued)
    return runs[0], runs[1]


def _claimed(run: Run) -> dict[str, Any]:
    rows = _rows(run.pk)
    rows["run"] = {k: v for k, v in rows["run"].items() if k != "lease_expires_at"}
    rows["holds"] = QuotaHold.objects.filter(run_id=run.pk).count()
    rows["returned"] = (run.agent.name, run.session.pk == run.session_id,
                        run.session.tenant.token_quota, run.epoch, run.status, run.state_json)
    return rows


@ONE_STATEMENT
@pytest.mark.parametrize("status", ["queued", "running"])
def test_both_claims_write_the_same_rows(twin_queued, status):
    sql_run, orm_run = twin_queued
    if status == "running":  # its worker died: the lease expired
        Run.objects.filter(pk__in=[sql_run.pk, orm_run.pk]).update(
            status="running", epoch=3, lease_owner="dead", state_json=STATE,
            lease_expires_at=datetime(2020, 1, 1, tzinfo=UTC))
    with CaptureQueriesContext(connection) as queries:
        by_sql = worker.claim_run(sql_run.pk, "worker-a")
    assert [q["sql"].split()[0] for q in queries][-1:] == ["EXECUTE"]  # nothing else after it
    by_orm = _orm_claim(orm_run.pk, "worker-a")
    assert by_sql is not None and by_orm is not None
    assert _claimed(by_sql) == _claimed(by_orm)
    claimed = _claimed(by_sql)
    assert claimed["holds"] == 0
    assert (claimed["run"]["status"], claimed["run"]["epoch"]) == (
        "running", 1 if status == "queued" else 4)
    events = [(e["type"], e["data"]) for e in claimed["events"]]
    if status == "queued":
        assert [e[0] for e in events] == ["run.status", "run.status"]
        assert events[-1] == ("run.status", {"status": "running", "turn": 0})
    else:  # the dead worker's lease is taken over, and the run says so
        assert events[-1] == ("run.lease_taken_over", {
            "from_worker": "dead", "from_epoch": 3, "to_worker": "worker-a", "epoch": 4,
            "lease_expired_at": "2020-01-01T00:00:00Z", "by": "claim"})
        assert len(events) == 2


@ONE_STATEMENT
def test_the_one_statement_claims_only_the_common_case(twin_queued):
    run, _ = twin_queued
    now = timezone.now()
    Run.objects.filter(pk=run.pk).update(cancel_requested=True)
    assert pg_claim.claim_unheld(run.pk, "worker-a", now, now) is None
    Run.objects.filter(pk=run.pk).update(cancel_requested=False, lease_owner="other",
                                         lease_expires_at=now + timedelta(minutes=1))
    assert pg_claim.claim_unheld(run.pk, "worker-a", now, now) is None
    assert pg_claim.claim_unheld(run.pk, "other", now, now) is not None  # its own lease
    assert pg_claim.claim_unheld("not-a-run-id", "worker-a", now, now) is None
    # What it did not claim, claim_run still decides: a cancel asked for is honoured.
    Run.objects.filter(pk=run.pk).update(cancel_requested=True, lease_expires_at=None)
    assert worker.claim_run(run.pk, "worker-b") is None
    assert Run.objects.get(pk=run.pk).status == "cancelled"
