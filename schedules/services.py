"""Writes for schedules, each audited in its transaction, and the selectors that apply the
tenancy rule (:mod:`accounts.scoping`)."""

from __future__ import annotations

import uuid
from typing import Any

from django.db import transaction
from django.db.models import QuerySet, Sum
from django.utils import timezone

from accounts.audit import audit_record
from accounts.models import AuditAction, Member
from accounts.scoping import get_visible, visible_to
from hango_project.config import hango
from hango_project.errors import Conflict, Unprocessable
from runs.intake.content import user_content
from runs.models import Run, Session
from schedules import cron, firing
from schedules.models import Fire, Schedule

FIELDS = ("name", "agent", "session", "cron", "timezone", "content", "multitask", "webhook",
          "pause_after_failures", "active")


def schedule_list(*, member: Member) -> QuerySet[Schedule]:
    return visible_to(Schedule.objects.all(), member).order_by("-created_at")


def schedule_get(*, member: Member, schedule_id: uuid.UUID | str) -> Schedule:
    return get_visible(Schedule.objects.all(), member, schedule_id, what="Schedule")


def fire_list(*, schedule: Schedule) -> QuerySet[Fire]:
    """``schedule`` comes from :func:`schedule_get`: whoever sees it sees its fires (each with
    its run, for its usage)."""
    return (Fire.objects.filter(schedule=schedule).select_related("run")
            .order_by("-fired_at", "-id"))


def schedule_runs(schedule: Schedule) -> QuerySet[Any]:
    """The ids of the runs the schedule started (a query, for a filter)."""
    return Fire.objects.filter(schedule=schedule, run__isnull=False).values("run_id")


def schedule_usage(schedule: Schedule) -> dict[str, int]:
    """The tokens the schedule's runs have spent, from the runs' own counters (one indexed
    read of its fires and their runs)."""
    counters = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
    sums = Run.objects.filter(pk__in=schedule_runs(schedule)).aggregate(
        **{c: Sum(c) for c in counters})
    return {c: int(sums[c] or 0) for c in counters}


def _checked(data: dict[str, Any], schedule: Schedule | None = None) -> dict[str, Any]:
    """The fields as stored: the content as blocks, the cron expression and zone checked (422
    naming the field), the agent the session's when a session is given."""
    fields = {k: v for k, v in data.items() if k in FIELDS}
    if "content" in fields:
        fields["content"] = user_content(fields["content"])
    expression = fields.get("cron", schedule.cron if schedule else "")
    zone = fields.get("timezone", schedule.timezone if schedule else "UTC")
    try:
        cron.zone(zone)
    except cron.BadSchedule as exc:
        raise Unprocessable(str(exc), detail={"timezone": [str(exc)]}) from None
    try:
        cron.check(expression, zone)
    except cron.BadSchedule as exc:
        raise Unprocessable(str(exc), detail={"cron": [str(exc)]}) from None
    if fields.get("session") is not None:
        fields["agent"] = fields["session"].agent
    return fields


def _next(schedule: Schedule) -> None:
    schedule.next_run_at = (cron.next_after(schedule.cron, schedule.timezone, timezone.now())
                            if schedule.active else None)


@transaction.atomic
def schedule_create(*, member: Member, data: dict[str, Any]) -> Schedule:
    fields = _checked(data)
    fields.setdefault("pause_after_failures", hango().schedule_pause_after_failures)
    schedule = Schedule(tenant_id=member.tenant_id, member=member, **fields)
    _next(schedule)
    schedule.save()
    audit_record(actor=member, tenant=member.tenant_id, action=AuditAction.SCHEDULE_CREATE,
                 obj_type="schedule", obj_id=schedule.pk, detail=_described(schedule))
    return schedule


@transaction.atomic
def schedule_update(*, schedule: Schedule, data: dict[str, Any],
                    actor: Member | None) -> Schedule:
    schedule = Schedule.objects.select_for_update().get(pk=schedule.pk)
    fields = _checked(data, schedule)
    was_active = schedule.active
    for name, value in fields.items():
        setattr(schedule, name, value)
    if {"cron", "timezone"} & set(fields) or schedule.active != was_active:
        _next(schedule)
    if schedule.active and not was_active:
        schedule.paused_reason, schedule.consecutive_failures = "", 0
    if not schedule.active and was_active:
        schedule.paused_reason = "Paused by hand."
    schedule.save()
    audit_record(actor=actor, tenant=schedule.tenant_id, action=AuditAction.SCHEDULE_UPDATE,
                 obj_type="schedule", obj_id=schedule.pk, detail={"fields": sorted(fields)})
    return schedule


def schedule_pause(*, schedule: Schedule, actor: Member | None) -> Schedule:
    return schedule_update(schedule=schedule, data={"active": False}, actor=actor)


def schedule_resume(*, schedule: Schedule, actor: Member | None) -> Schedule:
    """Active again from now on: the fire times that passed while paused are not fired."""
    return schedule_update(schedule=schedule, data={"active": True}, actor=actor)


@transaction.atomic
def schedule_delete(*, schedule: Schedule, actor: Member) -> None:
    audit_record(actor=actor, tenant=schedule.tenant_id, action=AuditAction.SCHEDULE_DELETE,
                 obj_type="schedule", obj_id=schedule.pk, detail=_described(schedule))
    schedule.delete()


@transaction.atomic
def schedule_run_now(*, schedule: Schedule, actor: Member) -> Fire:
    """Fire it now, outside its cron (its next fire time stays as it was); 409 while paused."""
    schedule = Schedule.objects.select_for_update().get(pk=schedule.pk)
    if not schedule.active:
        raise Conflict("The schedule is paused: resume it first.",
                       detail={"paused_reason": schedule.paused_reason})
    now = timezone.now()
    fired = firing.fire(schedule, fire_at=now, manual=True)
    schedule.save()
    audit_record(actor=actor, tenant=schedule.tenant_id, action=AuditAction.SCHEDULE_RUN,
                 obj_type="schedule", obj_id=schedule.pk,
                 detail={"fire": str(fired.pk), "status": fired.status})
    return fired


def next_session(schedule: Schedule) -> Session:
    """The session the next fire posts to: the schedule's, or the new one of its agent a fire
    would make (not saved: nothing of it is stored yet, which is what the inspector reads)."""
    if schedule.session_id is not None:
        session = Session.objects.select_related("agent", "tenant").get(pk=schedule.session_id)
        return session
    return Session(tenant=schedule.tenant, agent=schedule.agent, member=schedule.member,
                   title=schedule.name)


def _described(schedule: Schedule) -> dict[str, Any]:
    return {"name": schedule.name, "agent": str(schedule.agent_id),
            "session": str(schedule.session_id) if schedule.session_id else None,
            "cron": schedule.cron, "timezone": schedule.timezone}
