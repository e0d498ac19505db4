"""The journal of a run's MCP calls (runs.execution.stores.DbCallJournal): written under the claim's
guard before a call is sent, read by the next claim to know what was sent before it, and
cleared of a call a human decided on knowing its outcome was unknown."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from harness import serde
from harness.approval_values import PendingBatch, PendingCall
from harness.errors import Superseded
from harness.mcp.values import idempotency_key
from runs.execution.endings import sent_calls
from runs.execution.fence import Claim
from runs.execution.stores import DbCallJournal
from runs.execution.worker import claim_run
from runs.intake.decisions import run_approve
from runs.intake.services import run_cancel
from runs.models import Run, RunStatus, ToolCallStart


def test_a_call_recorded_by_one_claim_is_sent_before_for_the_next(queued_run):
    first = claim_run(queued_run.pk, "worker-a")
    journal = DbCallJournal(Claim(first.pk, first.epoch))
    journal.record(f"{first.pk}:2:c1", tool_use_id="c1", tool="docs/search")
    journal.record(f"{first.pk}:2:c1", tool_use_id="c1", tool="docs/search")  # once per key
    journal.record(f"{first.pk}:3:c1", tool_use_id="c1", tool="docs/search")  # an id reused
    assert journal.sent_before() == frozenset()  # its own claim sent them: not "before"
    rows = ToolCallStart.objects.filter(run=first).order_by("key")
    assert [(r.tool_use_id, r.key, r.epoch) for r in rows] == [
        ("c1", f"{first.pk}:2:c1", first.epoch), ("c1", f"{first.pk}:3:c1", first.epoch)]

    Run.objects.filter(pk=first.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    second = claim_run(first.pk, "worker-b")
    assert DbCallJournal(Claim(second.pk, second.epoch)).sent_before() == frozenset(
        {f"{first.pk}:2:c1", f"{first.pk}:3:c1"})


def test_a_claim_taken_over_records_nothing(queued_run):
    held = claim_run(queued_run.pk, "worker-a")
    Run.objects.filter(pk=held.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    run_cancel(run=held)
    with pytest.raises(Superseded):
        DbCallJournal(Claim(held.pk, held.epoch)).record("k", tool_use_id="c2", tool="docs/refund")
    assert not ToolCallStart.objects.filter(run=held).exists()


def test_a_decision_on_a_call_of_unknown_outcome_clears_its_entry(queued_run):
    claim = claim_run(queued_run.pk, "worker-a")
    journal = DbCallJournal(Claim(claim.pk, claim.epoch))
    journal.record(f"{claim.pk}:1:c1", tool_use_id="c1", tool="shop/lookup")  # an id reused
    journal.record(f"{claim.pk}:2:c1", tool_use_id="c1", tool="shop/refund")
    journal.record(f"{claim.pk}:2:c2", tool_use_id="c2", tool="shop/lookup")
    held = PendingCall(tool_use_id="c1", name="shop__refund", input={},
                       allowed_decisions=("approve", "reject"), reason="outcome_unknown")
    batch = PendingBatch(pending=(held,), turn=2)
    Run.objects.filter(pk=claim.pk).update(
        status=RunStatus.AWAITING_APPROVAL, lease_expires_at=None,
        state_json={**claim.state_json, "pending_batch": serde.batch_to_json(batch)})
    run_approve(run=Run.objects.get(pk=claim.pk),
                decisions=[{"tool_use_id": "c1", "type": "approve"}])
    # c1 of turn 2 is sent again under the human's decision, journaled anew; the rest stay.
    assert sorted(ToolCallStart.objects.filter(run=claim).values_list("key", flat=True)) == [
        f"{claim.pk}:1:c1", f"{claim.pk}:2:c2"]


def test_a_cancelled_batch_knows_which_calls_were_sent(queued_run):
    claim = claim_run(queued_run.pk, "worker-a")
    DbCallJournal(Claim(claim.pk, claim.epoch)).record(
        idempotency_key(str(claim.pk), 2, "c1"), tool_use_id="c1", tool="shop/refund")
    pending = tuple(PendingCall(tool_use_id=i, name="shop__refund", input={},
                                allowed_decisions=()) for i in ("c1", "c2"))
    assert sent_calls(claim, PendingBatch(pending=pending, turn=2)) == frozenset({"c1"})
    assert sent_calls(claim, PendingBatch(pending=pending, turn=3)) == frozenset()  # c1 of 2
