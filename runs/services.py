"""Writes for sessions and runs on the web side (the worker side is :mod:`runs.worker`)."""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone

from accounts.audit import audit_record
from accounts.models import AuditAction, Member
from accounts.usage import quota_admit
from agents.models import Agent
from hango_project.errors import Conflict, QuotaExceeded, Unprocessable
from harness import approvals
from harness.errors import InvalidContent, retryable_codes
from harness.messages import Message as HMessage
from harness.messages import TextBlock, ToolResultBlock
from harness.serde import content_from_json, content_to_json
from runs import tasks
from runs.checkpoint import INTERNAL_ERROR, cancel_unheld, take_over
from runs.events import append_events, status_event
from runs.models import ACTIVE_RUN_STATUSES, Message, Run, RunStatus, Session

# Failures a resume may retry: the provider was unavailable (a retryable provider error), the
# worker crashed, or the run stopped at the quota (resumable once the quota allows: a resume is
# admitted again).
RESUMABLE_ERRORS = retryable_codes() | {INTERNAL_ERROR, QuotaExceeded.code}


@transaction.atomic
def session_create(*, member: Member, agent: Agent, title: str = "") -> Session:
    """A new session of ``agent``; the caller must already be allowed to see the agent."""
    if agent.tenant_id != member.tenant_id:  # the scoping rule makes this unreachable from the API
        raise ValueError("agent and member belong to different tenants")
    session = Session.objects.create(
        tenant_id=member.tenant_id, agent=agent, member=member, title=title
    )
    audit_record(actor=member, tenant=session.tenant_id, action=AuditAction.SESSION_CREATE,
                 obj_type="session", obj_id=session.pk, detail={"agent": str(agent.pk)})
    return session


def user_content(content: Any) -> list[dict[str, Any]]:
    """A user message's content as stored blocks: a string, or a list of text/tool_result blocks."""
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    try:
        blocks = content_from_json(content)
    except InvalidContent as exc:
        raise Unprocessable(str(exc), detail={"content": [str(exc)]}) from None
    if not blocks:
        raise Unprocessable("The message is empty.", detail={"content": ["empty"]})
    if not all(isinstance(b, TextBlock | ToolResultBlock) for b in blocks):
        reason = "A user message holds text or tool_result blocks only."
        raise Unprocessable(reason, detail={"content": [reason]})
    if all(isinstance(b, TextBlock) and not b.text.strip() for b in blocks):
        raise Unprocessable("The message is empty.", detail={"content": ["empty"]})
    return content_to_json(blocks)


def _active_run_id(session: Session) -> str | None:
    active = session.runs.filter(status__in=ACTIVE_RUN_STATUSES).values_list("id", flat=True)
    found = active.first()
    return str(found) if found else None


def _conflict_active(session: Session) -> Conflict:
    active = _active_run_id(session)
    return Conflict("The session already has an active run.", detail={"active_run": active})


def message_post(*, session: Session, content: Any,
                 actor: Member | None = None) -> tuple[Message, Run]:
    """Store a user message and start a run for it, or answer 409 while a run is active."""
    blocks = user_content(content)
    try:
        with transaction.atomic():
            locked = Session.objects.select_for_update().get(pk=session.pk)
            if _active_run_id(locked):
                raise _conflict_active(locked)
            quota_admit(locked.tenant_id)  # 402 when spent; holds the tenant lock until commit
            run = Run.objects.create(session=locked, agent_id=locked.agent_id)
            last = locked.messages.aggregate(m=Max("seq"))["m"] or 0
            message = Message.objects.create(
                session=locked, seq=last + 1, role="user", content=blocks, run=run
            )
            append_events(run, [status_event(run)])
            run.save(update_fields=["event_seq"])
            Session.objects.filter(pk=locked.pk).update(updated_at=timezone.now())
            audit_record(actor=actor, tenant=locked.tenant_id, action=AuditAction.RUN_CREATE,
                         obj_type="run", obj_id=run.pk,
                         detail={"session": str(locked.pk), "message_id": str(message.pk)})
            tasks.enqueue_run(run.id)
    except IntegrityError:  # the one-active-run constraint, if two requests raced past the lock
        raise _conflict_active(session) from None
    return message, run


def run_cancel(*, run: Run, actor: Member | None = None) -> Run:
    """Cancel at once if no live worker holds the run (see :func:`runs.checkpoint.cancel_unheld`:
    a paused run's calls get their results, a stalled holder is fenced out); otherwise ask the
    worker to stop at its next boundary."""
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run.pk)
        if not run.is_active:
            raise Conflict(f"The run is already {run.status}.", detail={"status": run.status})
        held = run.lease_expires_at is not None and run.lease_expires_at > timezone.now()
        if run.status == RunStatus.RUNNING and held:
            run.cancel_requested = True
            run.save(update_fields=["cancel_requested", "updated_at"])
        else:  # queued, paused, or its holder's lease ran out (stalled or dead): fence it out
            cancel_unheld(run)
            run.save()
        _audit_run(actor, AuditAction.RUN_CANCEL, run,
                   outcome="cancel_requested" if run.cancel_requested else "cancelled")
    return run


def _audit_run(actor: Member | None, action: AuditAction, run: Run, **extra: Any) -> None:
    """The audit row of a run write, in the caller's transaction (``run`` is locked there)."""
    tenant_id = Session.objects.filter(pk=run.session_id).values_list("tenant_id", flat=True)[0]
    audit_record(actor=actor, tenant=tenant_id, action=action, obj_type="run", obj_id=run.pk,
                 detail={"session": str(run.session_id), **extra})


def run_resume(*, run: Run, actor: Member | None = None) -> Run:
    """A cancelled run (or one failed by a crash) continues from its last checkpoint."""
    try:
        with transaction.atomic():
            run = Run.objects.select_for_update().get(pk=run.pk)
            resumable = run.status == RunStatus.CANCELLED or (
                run.status == RunStatus.FAILED and (run.error or {}).get("code") in RESUMABLE_ERRORS
            )
            if not resumable:
                raise Conflict(f"A {run.status} run cannot be resumed.",
                               detail={"status": run.status})
            quota_admit(run.session.tenant_id)
            take_over(run)  # whoever held it before the cancel or the failure writes no more
            run.status = RunStatus.QUEUED
            run.cancel_requested = False
            run.error = None
            run.finished_at = None
            append_events(run, [status_event(run)])
            run.save()
            _audit_run(actor, AuditAction.RUN_RESUME, run)
            tasks.enqueue_run(run.id)
    except IntegrityError:
        raise _conflict_active(run.session) from None
    return run


def run_approve(*, run: Run, decisions: list[dict[str, Any]],
                actor: Member | None = None) -> Run:
    """Record one decision per pending tool call and queue the paused run to finish its batch;
    an edited call's stored arguments become the edited ones (:func:`_rewrite_edited_calls`).

    Under the run's row lock: a second approve (or one racing it) finds the run no longer
    awaiting approval and answers 409, so a batch is resumed exactly once."""
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run.pk)
        batch_json = (run.state_json or {}).get("pending_batch")
        if run.status != RunStatus.AWAITING_APPROVAL or batch_json is None:
            raise Conflict(f"The run is {run.status}, not awaiting approval.",
                           detail={"status": run.status})
        quota_admit(run.session.tenant_id)
        try:
            batch = approvals.decide(approvals.batch_from_json(batch_json), decisions)
        except approvals.InvalidDecisions as exc:
            raise Unprocessable(str(exc), detail={"decisions": exc.problems,
                                                  "pending": exc.pending}) from None
        run.state_json = {**run.state_json, "pending_batch": approvals.batch_to_json(batch)}
        _rewrite_edited_calls(run, batch)
        take_over(run)
        run.status = RunStatus.QUEUED
        append_events(run, [approvals.decided_event(batch), status_event(run)])
        run.save()
        # Per call its decision type and tool name only: never an edited input or a message.
        _audit_run(actor, AuditAction.RUN_APPROVE, run, decisions=[
            {"tool_use_id": p.tool_use_id, "tool": p.name,
             "type": batch.decisions[p.tool_use_id].type} for p in batch.pending])
        tasks.enqueue_run(run.id)
    return run


def _rewrite_edited_calls(run: Run, batch: approvals.PendingBatch) -> None:
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
        Message.objects.filter(pk=last.pk, run_id=run.pk).update(
            content=content_to_json(edited.content))
