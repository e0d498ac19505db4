"""Client tool results on the server: what a parked run asks its caller for (its
``required_action``), the caller's answers (``POST /v1/runs/{id}/tool-results``), the expiry of
the calls left unanswered, and how a parked run moves once some of its held calls are answered
(:func:`settle`, shared with the approve endpoint).

The lifecycle of the calls themselves is :mod:`harness.client_calls`; this module keeps it in
the run's row: the batch in ``state_json``, the deadline in ``action_expires_at`` (set by the
turn that parks the run, :mod:`runs.execution.checkpointer`), each write under the run's row lock,
so a result is recorded once and a run is queued once however many answers race.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from django.db import transaction
from django.utils import timezone

from accounts.audit import audit_record
from accounts.models import AuditAction, Member
from hango_project.errors import Conflict
from harness import client_calls, serde
from harness.approval_values import PendingBatch
from harness.client_calls import ClientResult, RejectedResults
from runs import tracing
from runs.execution import tasks, webhooked
from runs.execution.events import append_events, status_event, timestamp
from runs.execution.fence import take_over
from runs.intake.admission import quota_admit
from runs.models import PARKED_RUN_STATUSES, Run, RunStatus, Session

Event = tuple[str, dict[str, Any]]
REQUIRED_ACTION_TYPE = "submit_tool_results"
REQUIRED_ACTION_SCHEMA = {
    "type": ["object", "null"], "required": ["type", "tool_calls", "expires_at"],
    "description": "What the run waits for from the caller while parked: the client tool calls "
                   "not answered yet (send them to `POST /v1/runs/{id}/tool-results`), and when "
                   "they are answered as failed (null: never). null otherwise.",
    "properties": {"type": {"enum": ["submit_tool_results"]},
                   "tool_calls": {"type": "array", "items": {
                       "type": "object", "required": ["tool_use_id", "name", "input"],
                       "properties": {"tool_use_id": {"type": "string"},
                                      "name": {"type": "string"}, "input": {"type": "object"}}}},
                   "expires_at": {"type": ["string", "null"], "format": "date-time"}}}
# The most parked runs one expiry pass takes (each in its own short transaction), and how often
# every worker's reconciler thread makes one: an expiry lands within a tick of its deadline.
EXPIRE_BATCH = 200
EXPIRY_TICK_SECONDS = 1.0


def required_action(run: Run) -> dict[str, Any] | None:
    """The run's ``required_action``: the client calls it waits on, or None."""
    data = run.state_json or {}
    if run.status not in PARKED_RUN_STATUSES or data.get("pending_batch") is None:
        return None
    waiting = serde.batch_from_json(data["pending_batch"]).awaiting_results
    if not waiting:
        return None
    return {"type": REQUIRED_ACTION_TYPE,
            "tool_calls": [{"tool_use_id": p.tool_use_id, "name": p.name, "input": p.input}
                           for p in waiting],
            "expires_at": timestamp(run.action_expires_at)}


def parked_batch(run: Run, *, waiting_for: str) -> PendingBatch:
    """The paused batch of a locked run, or a 409 saying it is not parked."""
    batch_json = (run.state_json or {}).get("pending_batch")
    if run.status not in PARKED_RUN_STATUSES or batch_json is None:
        raise Conflict(f"The run is {run.status}, not waiting for {waiting_for}.",
                       detail={"status": run.status})
    return serde.batch_from_json(batch_json)


def settle(run: Run, batch: PendingBatch, events: list[Event], *, admit: bool = True) -> None:
    """Store a locked parked run's ``batch`` with some held calls newly answered, and move the
    run: queued once every held call has its decision or result (admitted against the quota
    when ``admit``), else ``awaiting_approval`` while a human's decision is missing, else
    ``requires_action``. ``events`` are appended, with a status event when it changed; a run
    newly ``requires_action`` tells the webhooks. The caller saves nothing: this does."""
    before = run.status
    run.state_json = {**run.state_json, "pending_batch": serde.batch_to_json(batch)}
    if not batch.awaiting_results:
        run.action_expires_at = None
    if batch.decided:
        if admit:
            quota_admit(Session.objects.filter(pk=run.session_id)
                        .values_list("tenant_id", flat=True)[0])
        take_over(run)  # nobody holds a parked run; whoever did writes no more
        run.status = RunStatus.QUEUED
        tasks.enqueue_run(run.pk)
    elif batch.awaiting_approval:
        run.status = RunStatus.AWAITING_APPROVAL
    else:
        run.status = RunStatus.REQUIRES_ACTION
    changed = run.status != before
    append_events(run, [*events, *([status_event(run)] if changed else [])])
    run.save()
    if changed and run.status == RunStatus.REQUIRES_ACTION:
        webhooked.deliveries_for(run)


def run_submit_tool_results(*, run: Run, results: Sequence[ClientResult],
                            actor: Member | None = None) -> Run:
    """Record the caller's results for some or all of a parked run's client calls; the run is
    queued once every held call is answered. Under the run's row lock: a result for a call
    already answered (a retry, or a race) is a 409 and nothing of the submission is kept."""
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run.pk)
        batch = parked_batch(run, waiting_for="tool results")
        try:
            batch = client_calls.submit(batch, results)
        except RejectedResults as exc:
            raise Conflict(str(exc), detail=exc.detail) from None
        ids = [r.tool_use_id for r in results]
        settle(run, batch, [client_calls.submitted_event(ids, batch)])
        tracing.mark_request(run)  # linked to the run's trace, as an approve is
        names = {p.tool_use_id: p.name for p in batch.pending}
        # Per call its id, tool and whether it failed: never the output.
        tenant_id = (Session.objects.filter(pk=run.session_id)
                     .values_list("tenant_id", flat=True)[0])
        audit_record(actor=actor, tenant=tenant_id, action=AuditAction.RUN_TOOL_RESULTS,
                     obj_type="run", obj_id=run.pk, detail={
                         "session": str(run.session_id), "results": [
                             {"tool_use_id": r.tool_use_id, "tool": names[r.tool_use_id],
                              "is_error": r.is_error} for r in results]})
    return run


def expire_due(limit: int = EXPIRE_BATCH) -> list[uuid.UUID]:
    """Answer as failed the client calls of the parked runs whose deadline has passed
    (:func:`harness.client_calls.expire`), at most ``limit`` runs; the ones it did. Each run in
    its own transaction, its row locked with ``SKIP LOCKED`` (a run a submission holds is
    left for the next pass, which finds it answered or still due), so concurrent passes of
    several workers never expire a run twice."""
    due = list(Run.objects.filter(action_expires_at__lte=timezone.now())
               .order_by("action_expires_at").values_list("pk", flat=True)[:limit])
    return [run_id for run_id in due if _expire(run_id)]


def expiry_pass() -> str:
    """The reconciler thread's pass (every :data:`EXPIRY_TICK_SECONDS`, registered by
    ``runs.apps``): the due runs' calls expired, what it did for the log."""
    expired = expire_due()
    return f"expired the client tool calls of {len(expired)} runs" if expired else ""


def _expire(run_id: uuid.UUID) -> bool:
    with transaction.atomic():
        run = (Run.objects.select_for_update(skip_locked=True)
               .filter(pk=run_id, action_expires_at__lte=timezone.now()).first())
        if run is None:
            return False
        if run.status not in PARKED_RUN_STATUSES or not run.state_json.get("pending_batch"):
            run.action_expires_at = None  # nothing waits any more
            run.save(update_fields=["action_expires_at"])
            return False
        batch, late = client_calls.expire(serde.batch_from_json(run.state_json["pending_batch"]))
        # Not admitted against the quota: the caller's silence is no new spending; a spent
        # quota stops the run at its next model call.
        settle(run, batch, [client_calls.expired_event(late)], admit=False)
    return True
