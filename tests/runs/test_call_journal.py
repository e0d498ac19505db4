"""The journal of a run's MCP calls (runs.stores.DbCallJournal): written under the claim's
guard before a call is sent, read by the next claim to know what was sent before it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from harness.errors import Superseded
from runs.fence import Claim
from runs.models import Run, ToolCallStart
from runs.services import run_cancel
from runs.stores import DbCallJournal
from runs.worker import claim_run


def test_a_call_recorded_by_one_claim_is_sent_before_for_the_next(queued_run):
    first = claim_run(queued_run.pk, "worker-a")
    journal = DbCallJournal(Claim(first.pk, first.epoch))
    journal.record("c1", tool="docs/search", key=f"{first.pk}:2:c1")
    journal.record("c1", tool="docs/search", key="again")  # once per call
    assert journal.sent_before() == frozenset()  # its own claim sent it: not "before"
    [row] = ToolCallStart.objects.filter(run=first)
    assert (row.tool_use_id, row.key, row.epoch) == ("c1", f"{first.pk}:2:c1", first.epoch)

    Run.objects.filter(pk=first.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    second = claim_run(first.pk, "worker-b")
    assert DbCallJournal(Claim(second.pk, second.epoch)).sent_before() == frozenset({"c1"})


def test_a_claim_taken_over_records_nothing(queued_run):
    held = claim_run(queued_run.pk, "worker-a")
    Run.objects.filter(pk=held.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    run_cancel(run=held)
    with pytest.raises(Superseded):
        DbCallJournal(Claim(held.pk, held.epoch)).record("c2", tool="docs/refund", key="k")
    assert not ToolCallStart.objects.filter(run=held).exists()
