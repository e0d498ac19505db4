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
from hango_project.errors import Conflict, Unprocessable
from harness.errors import InvalidContent
from harness.messages import TextBlock, ToolResultBlock, ToolUseBlock
from harness.middleware.human_in_the_loop import cancelled_batch_message
from harness.serde import content_from_json, content_to_json
from harness.state import (
    ApprovalDecision,
    PendingBatch,
    pending_batch_from_json,
    pending_batch_to_json,
)
from runs import dispatch
from runs.events import EVENT_MESSAGE, append_events, status_event
from runs.models import ACTIVE_RUN_STATUSES, Message, Run, RunStatus, Session

# Failures a resume may retry: the worker crashed or the provider was unavailable.
RESUMABLE_ERRORS = frozenset({
    "internal_error", "provider_unavailable", "provider_overloaded", "provider_rate_limited",
    "quota_exceeded",  # stopped at the quota: resumable once the quota allows (admitted again)
})


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
            dispatch.enqueue_run(run.id)
    except IntegrityError:  # the one-active-run constraint, if two requests raced past the lock
        raise _conflict_active(session) from None
    return message, run


def run_cancel(*, run: Run, actor: Member | None = None) -> Run:
    """Cancel at once if no worker holds the run (a paused run's calls get their results, see
    :func:`close_paused_batch`); otherwise ask the worker to stop."""
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run.pk)
        if not run.is_active:
            raise Conflict(f"The run is already {run.status}.", detail={"status": run.status})
        held = run.lease_expires_at is not None and run.lease_expires_at > timezone.now()
        if run.status == RunStatus.RUNNING and held:
            run.cancel_requested = True
            run.save(update_fields=["cancel_requested", "updated_at"])
        else:
            close_paused_batch(run)
            run.status = RunStatus.CANCELLED
            run.cancel_requested = False
            run.finished_at = timezone.now()
            run.lease_owner, run.lease_expires_at = "", None
            append_events(run, [status_event(run)])
            run.save()
        _audit_run(actor, AuditAction.RUN_CANCEL, run,
                   outcome="cancel_requested" if run.cancel_requested else "cancelled")
    return run


def _audit_run(actor: Member | None, action: AuditAction, run: Run, **extra: Any) -> None:
    """The audit row of a run write, in the caller's transaction (``run`` is locked there)."""
    tenant_id = Session.objects.filter(pk=run.session_id).values_list("tenant_id", flat=True)[0]
    audit_record(actor=actor, tenant=tenant_id, action=action, obj_type="run", obj_id=run.pk,
                 detail={"session": str(run.session_id), **extra})


def close_paused_batch(run: Run) -> None:
    """Answer every call of a locked run's paused tool batch, as its run is cancelled.

    A run paused for approval (or approved but not yet resumed) has stored an assistant message
    whose calls have no results yet. Cancelling it appends the user message that answers all of
    them in call order (what already ran keeps its result, the rest say the run was cancelled),
    so the history stays valid for a resume or the session's next run. The caller saves ``run``.
    """
    data = run.state_json or {}
    if data.get("pending_batch") is None:
        return
    batch = pending_batch_from_json(data["pending_batch"])
    run.state_json = {k: v for k, v in data.items() if k != "pending_batch"}
    last = Message.objects.filter(session_id=run.session_id).order_by("-seq").first()
    if last is None or last.role != "assistant":  # nothing waits for a result
        return
    uses = [b for b in content_from_json(last.content) if isinstance(b, ToolUseBlock)]
    if not uses:
        return
    closing = cancelled_batch_message(uses, batch)
    message = Message.objects.create(session_id=run.session_id, seq=last.seq + 1, role="user",
                                     content=content_to_json(closing.content), run=run)
    append_events(run, [(EVENT_MESSAGE, {"id": str(message.id), "seq": message.seq,
                                         "role": message.role})])


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
            run.status = RunStatus.QUEUED
            run.cancel_requested = False
            run.error = None
            run.finished_at = None
            append_events(run, [status_event(run)])
            run.save()
            _audit_run(actor, AuditAction.RUN_RESUME, run)
            dispatch.enqueue_run(run.id)
    except IntegrityError:
        raise _conflict_active(run.session) from None
    return run


def run_approve(*, run: Run, decisions: list[dict[str, Any]],
                actor: Member | None = None) -> Run:
    """Record one decision per pending tool call and queue the paused run to finish its batch.

    Under the run's row lock: a second approve (or one racing it) finds the run no longer
    awaiting approval and answers 409, so a batch is resumed exactly once."""
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run.pk)
        batch_json = (run.state_json or {}).get("pending_batch")
        if run.status != RunStatus.AWAITING_APPROVAL or batch_json is None:
            raise Conflict(f"The run is {run.status}, not awaiting approval.",
                           detail={"status": run.status})
        quota_admit(run.session.tenant_id)
        batch = pending_batch_from_json(batch_json)
        batch.decisions = _checked_decisions(batch, decisions)
        run.state_json = {**run.state_json, "pending_batch": pending_batch_to_json(batch)}
        run.status = RunStatus.QUEUED
        append_events(run, [status_event(run)])
        run.save()
        # Per call its decision type and tool name only: never an edited input or a message.
        _audit_run(actor, AuditAction.RUN_APPROVE, run, decisions=[
            {"tool_use_id": p.tool_use_id, "tool": p.name,
             "type": batch.decisions[p.tool_use_id].type} for p in batch.pending])
        dispatch.enqueue_run(run.id)
    return run


def _checked_decisions(batch: PendingBatch,
                       decisions: list[dict[str, Any]]) -> dict[str, ApprovalDecision]:
    """Exactly one allowed decision per pending call, or a 422 saying what is wrong."""
    pending = {p.tool_use_id: p for p in batch.pending}
    problems = []
    seen: dict[str, ApprovalDecision] = {}
    for d in decisions:
        call_id = d["tool_use_id"]
        call = pending.get(call_id)
        if call is None:
            problems.append(f"{call_id!r} is not a pending tool call of this run.")
        elif call_id in seen:
            problems.append(f"{call_id!r} has more than one decision.")
        elif d["type"] not in call.allowed_decisions:
            problems.append(f"{call_id!r} ({call.name}) allows {list(call.allowed_decisions)}, "
                            f"not {d['type']!r}.")
        else:
            seen[call_id] = ApprovalDecision(type=d["type"], input=d.get("input"),
                                             message=d.get("message"))
    answered = {d["tool_use_id"] for d in decisions}
    problems += [f"{i!r} ({call.name}) needs a decision." for i, call in pending.items()
                 if i not in answered]
    if problems:
        raise Unprocessable("Give exactly one allowed decision for each pending tool call.",
                            detail={"decisions": problems,
                                    "pending": [p.tool_use_id for p in batch.pending]})
    return seen
