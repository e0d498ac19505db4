"""A human's decisions on a run paused for approval (``POST /v1/runs/{id}/approve``): recorded
under the run's row lock, an edited call's stored arguments rewritten, and the run queued to
finish its batch (or parked on while client tools' calls still wait)."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from accounts.models import AuditAction, Member
from hango_project.errors import Conflict, Unprocessable
from harness import approvals
from harness.approval_values import PendingBatch
from harness.mcp.values import idempotency_key
from harness.messages import Message as HMessage
from harness.serde import content_from_json, content_to_json
from runs import tracing
from runs.intake import client_results
from runs.intake.services import audit_run
from runs.models import Message, Run, ToolCallStart


def run_approve(*, run: Run, decisions: list[dict[str, Any]],
                actor: Member | None = None) -> Run:
    """Record one decision per pending tool call and queue the paused run to finish its batch
    (or, while client tools' calls still wait, park it for their results:
    :func:`runs.intake.client_results.settle`); an edited call's stored arguments become the edited
    ones (:func:`_rewrite_edited_calls`).
    A call held because its outcome was unknown leaves the run's journal of sent MCP calls: the
    human decided knowing, so it is sent once more (and journaled anew) if approved.

    Under the run's row lock: a second approve (or one racing it) finds no decision missing
    and answers 409, so a batch is resumed exactly once."""
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run.pk)
        batch = client_results.parked_batch(run, waiting_for="approval")
        if not batch.awaiting_approval:
            raise Conflict(f"The run is {run.status}, not awaiting approval.",
                           detail={"status": run.status})
        try:
            batch = approvals.decide(batch, decisions)
        except approvals.InvalidDecisions as exc:
            raise Unprocessable(str(exc), detail={"decisions": exc.problems,
                                                  "pending": exc.pending}) from None
        _rewrite_edited_calls(run, batch)
        ToolCallStart.objects.filter(run=run, key__in=[
            idempotency_key(str(run.pk), batch.turn, p.tool_use_id)
            for p in batch.pending if p.reason == "outcome_unknown"]).delete()
        client_results.settle(run, batch, [approvals.decided_event(batch)])
        # Per call its decision type and tool name only: never an edited input or a message.
        audit_run(actor, AuditAction.RUN_APPROVE, run, decisions=[
            {"tool_use_id": p.tool_use_id, "tool": p.name,
             "type": batch.decisions[p.tool_use_id].type} for p in batch.approval_held])
        tracing.mark_request(run)
    return run


def _rewrite_edited_calls(run: Run, batch: PendingBatch) -> None:
    """The one rewrite of a stored message: the paused batch's assistant message takes each
    edited call's new arguments, so the history (and the context inspector) show what runs; the
    model's arguments stay in the ``approval.decided`` event.

    Fenced by the caller's lock on the paused run, which no worker holds: only the session's
    last message, written by this run and holding exactly this batch's calls, is changed. Any
    other (a history that no longer matches) is left alone; the resumed turn then fails the run
    with ``invalid_state`` as it would have."""
    last = (Message.objects.filter(session_id=run.session_id).order_by("-seq")
            .only("pk", "role", "run_id", "content").first())
    if last is None or last.run_id != run.pk or last.role != "assistant":
        return
    stored = HMessage(role="assistant", content=content_from_json(last.content))
    if approvals.waiting_calls(batch, stored.tool_uses) is None:
        return
    edited = approvals.apply_edits(stored, batch)
    if edited is not stored:
        # Its stored count was the model's arguments': gone with them (counted again on read).
        Message.objects.filter(pk=last.pk, run_id=run.pk).update(
            content=content_to_json(edited.content), content_tokens=None, tokens_counter="")
