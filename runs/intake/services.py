"""Writes for sessions and runs on the web side (the worker side is
:mod:`runs.execution.worker`)."""

from __future__ import annotations

import uuid
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.audit import audit_entry, audit_record
from accounts.models import AuditAction, AuditEntry, Member, Tenant
from agents import versions
from agents.models import Agent
from hango_project.errors import Conflict, QuotaExceeded
from hango_project.rows import insert
from harness import mcp
from harness.errors import retryable_codes
from runs import tracing
from runs.execution import queue, tasks
from runs.execution.endings import INTERNAL_ERROR, cancel_unheld
from runs.execution.events import append_events, status_event
from runs.execution.fence import take_over
from runs.execution.queue import Multitask
from runs.execution.store import store
from runs.intake.admission import quota_admit
from runs.intake.content import user_content
from runs.models import ACTIVE_RUN_STATUSES, Message, Run, RunStatus, Session

# Failures a resume may retry: the provider was unavailable (a retryable provider error), the
# worker crashed, or the run stopped at the quota (resumable once the quota allows: a resume is
# admitted again), or an MCP server it needs was out of reach or lacked a credential.
RESUMABLE_ERRORS = retryable_codes() | {INTERNAL_ERROR, QuotaExceeded.code,
                                         mcp.SERVER_UNAVAILABLE, mcp.CREDENTIAL_MISSING}


@transaction.atomic
def session_create(*, member: Member, agent: Agent, title: str = "",
                   agent_version: int | None = None) -> Session:
    """A new session of ``agent``, pinned to its version ``agent_version`` if given (a 422 when
    it has none such); the caller must already be allowed to see the agent."""
    if agent.tenant_id != member.tenant_id:  # the scoping rule makes this unreachable from the API
        raise ValueError("agent and member belong to different tenants")
    session = Session.objects.create(
        tenant_id=member.tenant_id, agent=agent, member=member, title=title,
        agent_version=versions.check_pin(agent, agent_version))
    audit_record(actor=member, tenant=session.tenant_id, action=AuditAction.SESSION_CREATE,
                 obj_type="session", obj_id=session.pk, detail={
                     "agent": str(agent.pk), "agent_version": agent_version})
    return session


@transaction.atomic
def session_update(*, session: Session, data: dict[str, Any],
                   actor: Member | None = None) -> Session:
    """``title`` and the ``agent_version`` pin (null: the latest) as given; a run already made
    keeps the version it recorded."""
    versions.check_pin(session.agent, data.get("agent_version"))
    changed = [k for k in ("title", "agent_version") if k in data]
    for name in changed:
        setattr(session, name, data[name])
    if changed:
        session.save(update_fields=[*changed, "updated_at"])
    audit_record(actor=actor, tenant=session.tenant_id, action=AuditAction.SESSION_UPDATE,
                 obj_type="session", obj_id=session.pk, detail={"changed": changed})
    return session


# A client refused a second message learns the one field that lets it post anyway.
MULTITASK_HINT = ("Send the message with `multitask` `enqueue` to run it after the active "
                  "run, or `interrupt` to cancel the active run and run it next.")


def _conflict_active(session_id: uuid.UUID, active: uuid.UUID | None = None, *,
                     hint: str = MULTITASK_HINT) -> Conflict:
    """409 for a second active run of the session; ``hint`` says how to post anyway."""
    if active is None:
        active = (Run.objects.filter(session_id=session_id, status__in=ACTIVE_RUN_STATUSES)
                  .values_list("id", flat=True).first())
    return Conflict(" ".join(filter(None, ["The session already has an active run.", hint])),
                    detail={"active_run": str(active) if active else None})


def message_post(*, session: Session, content: Any, multitask: str = Multitask.REJECT,
                 actor: Member | None = None) -> tuple[Message, Run]:
    """Store a user message and start a run for it. While the session has an active run,
    ``multitask`` decides (:mod:`runs.execution.queue`): ``reject`` answers 409 naming it;
    ``enqueue`` queues the message, its run ``pending`` until the runs before it have ended;
    ``interrupt`` queues it too and cancels the runs before it — the active one at its next boundary
    (at once when no worker holds it: paused, queued, or stalled), the pending ones as their turn
    comes.

    A queued message is returned unsaved, with no seq: it joins the history when its run
    starts."""
    blocks = user_content(content)
    strategy = Multitask(multitask)
    try:
        with transaction.atomic():
            active, waiting = queue.locked_active_run(session.pk)
            if active is None and waiting:  # their start was lost
                active = _started(queue.start_next(session.pk))
            if active is not None and strategy is Multitask.REJECT:
                conflict = _conflict_active(session.pk, active.pk)  # raised once this commits
            else:
                conflict = None
                message, run = _post(session, blocks, strategy, active, actor)
    except IntegrityError:  # the one-active-run constraint, if two requests raced past the lock
        raise _conflict_active(session.pk) from None
    if conflict is not None:
        raise conflict
    return message, run


def _post(session: Session, blocks: list[dict[str, Any]], strategy: Multitask,
          active: Run | None, actor: Member | None) -> tuple[Message, Run]:
    """:func:`message_post` past the conflict check, in its transaction."""
    # 402 when spent; holds the tenant lock until commit. The caller's key read its tenant.
    quota_admit(session.tenant_id, known=_tenant_read(actor))
    detail: dict[str, Any] = {"session": str(session.pk)}

    def audit(run: Run, message: Message) -> AuditEntry:
        return audit_entry(actor=actor, tenant=session.tenant_id, action=AuditAction.RUN_CREATE,
                           obj_type="run", obj_id=run.pk,
                           detail={**detail, "message_id": str(message.pk)})

    if active is None:  # the audit row goes in the post's one statement
        message, run, behind = store().start_run(session, blocks, audit)
        tasks.enqueue_run(run.id, behind=behind)  # its tenant's share counted there too
    else:
        detail["multitask"] = strategy.value
        ended = False
        if strategy is Multitask.INTERRUPT:
            queue.cancel_waiting(session.pk)
            ended = _stop(active)
            detail["interrupted"] = str(active.pk)
        message, run = queue.enqueue(session, blocks)
        if ended and (started := queue.start_next(session.pk)) is not None:
            message, run = started.message, started.run
            _started(started)
        insert(audit(run, message))
    tracing.mark_request(run)  # the run whose trace this request's span begins
    return message, run


def _tenant_read(actor: Member | None) -> Tenant | None:
    """The actor's tenant if this request has read it already (its API key's lookup loads it),
    else None: never a read for it."""
    if actor is None or not Member._meta.get_field("tenant").is_cached(actor):
        return None
    return actor.tenant


def _started(started: queue.Started | None) -> Run | None:
    """The run a waiting message started with, enqueued once the transaction commits."""
    if started is None:
        return None
    tasks.enqueue_run(started.run.pk)
    return started.run


def _stop(run: Run) -> bool:
    """Cancel a locked active run: at once when no live worker holds it (see
    :func:`runs.execution.endings.cancel_unheld`: a paused run's calls get their results, a stalled
    holder is fenced out), else by asking its worker to stop at its next boundary. True when
    it ended here. The caller saves nothing: this does."""
    held = run.lease_expires_at is not None and run.lease_expires_at > timezone.now()
    if run.status == RunStatus.RUNNING and held:
        run.cancel_requested = True
        run.save(update_fields=["cancel_requested", "updated_at"])
        return False
    cancel_unheld(run)  # queued, paused, or its holder's lease ran out (stalled or dead)
    run.save()
    return True


def run_cancel(*, run: Run, actor: Member | None = None) -> Run:
    """Cancel an active run (:func:`_stop`) and start the session's next waiting message if it
    ended here; a pending run is asked to cancel, which it does when its turn comes (its message
    still joins the history then, in order)."""
    with transaction.atomic():
        queue.lock_session(run.session_id)  # before the run's row, as every such writer
        run = Run.objects.select_for_update().get(pk=run.pk)
        tracing.mark_request(run)
        if run.status == RunStatus.PENDING:
            if not run.cancel_requested:
                run.cancel_requested = True
                run.save(update_fields=["cancel_requested", "updated_at"])
            audit_run(actor, AuditAction.RUN_CANCEL, run, outcome="cancel_requested")
            return run
        if not run.is_active:
            raise Conflict(f"The run is already {run.status}.", detail={"status": run.status})
        if _stop(run):
            _started(queue.start_next(run.session_id))
        audit_run(actor, AuditAction.RUN_CANCEL, run,
                   outcome="cancel_requested" if run.cancel_requested else "cancelled")
    return run


def run_withdraw(*, run: Run, actor: Member | None = None) -> None:
    """Take back a message still waiting in its session's queue: its pending run is deleted
    with it, and it never joins the history (the admin's deletion of a waiting message). 409
    once the run is no longer pending: its message is in the history by then (cancel the run
    instead). Audited as the run's cancel, ``outcome`` ``withdrawn``."""
    with transaction.atomic():
        queue.lock_session(run.session_id)  # the queue starts no run meanwhile
        locked = Run.objects.select_for_update().filter(pk=run.pk).first()
        if locked is None or locked.status != RunStatus.PENDING:
            status = locked.status if locked else "deleted"
            raise Conflict(f"The run is no longer waiting (it is {status}), so its message is "
                           "not withdrawn: once a run starts, its message is in the history "
                           "(cancel the run instead).", detail={"status": status})
        audit_run(actor, AuditAction.RUN_CANCEL, locked, outcome="withdrawn")
        locked.delete()


def audit_run(actor: Member | None, action: AuditAction, run: Run, **extra: Any) -> None:
    """The audit row of a run write, in the caller's transaction (``run`` is locked there)."""
    tenant_id = Session.objects.filter(pk=run.session_id).values_list("tenant_id", flat=True)[0]
    audit_record(actor=actor, tenant=tenant_id, action=action, obj_type="run", obj_id=run.pk,
                 detail={"session": str(run.session_id), **extra})


def run_resume(*, run: Run, actor: Member | None = None) -> Run:
    """A cancelled run (or one failed by a crash) continues from its last checkpoint."""
    try:
        with transaction.atomic():
            queue.lock_session(run.session_id)  # a run becomes active under it
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
            audit_run(actor, AuditAction.RUN_RESUME, run)
            tracing.mark_request(run)
            tasks.enqueue_run(run.id)
    except IntegrityError:
        raise _conflict_active(run.session_id, hint="") from None  # multitask: not a resume's
    return run
