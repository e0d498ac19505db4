"""Schedules and their fires."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from accounts.models import Member, Tenant
from accounts.tenancy import Tenancy
from agents.models import Agent
from hango_project.ids import time_ordered_uuid
from runs.models import Run, Session
from webhooks.models import Endpoint


class Schedule(models.Model):
    """A message sent on a cron expression in a time zone: to a new session of ``agent`` each
    time, or to ``session``. ``next_run_at`` is when it fires next (None while paused); fire
    times missed by more than ``HANGO_SCHEDULE_GRACE_SECONDS`` (workers down, a long pause) are
    skipped and counted, never fired late in a burst."""

    tenancy = Tenancy(tenant="tenant", owner="member")

    id = models.UUIDField(primary_key=True, default=time_ordered_uuid, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="schedules")
    member = models.ForeignKey(Member, on_delete=models.CASCADE, related_name="schedules")
    name = models.CharField(max_length=200)
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="schedules")
    session = models.ForeignKey(Session, null=True, blank=True, on_delete=models.CASCADE,
                                related_name="schedules")
    cron = models.CharField(max_length=200)
    timezone = models.CharField(max_length=64, default="UTC")
    content = models.JSONField()  # the message's blocks, as a run's user message stores them
    multitask = models.CharField(max_length=16, default="enqueue")
    webhook = models.ForeignKey(Endpoint, null=True, blank=True, on_delete=models.SET_NULL,
                                related_name="schedules")
    active = models.BooleanField(default=True)
    paused_reason = models.CharField(max_length=500, blank=True, default="")
    next_run_at = models.DateTimeField(null=True, blank=True)
    last_fired_at = models.DateTimeField(null=True, blank=True)
    missed = models.PositiveIntegerField(default=0)  # fire times skipped, in all
    consecutive_failures = models.PositiveIntegerField(default=0)
    pause_after_failures = models.PositiveIntegerField(default=3)  # 0: never
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "schedules"
        indexes = [models.Index(fields=["next_run_at"], condition=Q(active=True),
                                name="schedule_due")]

    def __str__(self) -> str:
        return self.name


class FireStatus(models.TextChoices):
    STARTED = "started"  # its run is under way
    REFUSED = "refused"  # no run: the session was busy (multitask reject), the quota spent, …
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


FINISHED = (FireStatus.COMPLETED, FireStatus.FAILED, FireStatus.CANCELLED)


class Fire(models.Model):
    """One fire of a schedule: at most one per fire time (the unique key is what makes a fire
    happen once however many workers tick), or a "run now" (``manual``)."""

    tenancy = Tenancy(tenant="schedule__tenant", owner="schedule__member")

    id = models.UUIDField(primary_key=True, default=time_ordered_uuid, editable=False)
    schedule = models.ForeignKey(Schedule, on_delete=models.CASCADE, related_name="fires")
    fire_at = models.DateTimeField()  # the fire time (a manual fire: when it was asked)
    fired_at = models.DateTimeField()
    manual = models.BooleanField(default=False)
    status = models.CharField(max_length=16, choices=FireStatus.choices)
    session = models.ForeignKey(Session, null=True, blank=True, on_delete=models.SET_NULL,
                                related_name="+")
    run = models.ForeignKey(Run, null=True, blank=True, on_delete=models.SET_NULL,
                            related_name="+")
    error = models.JSONField(null=True, blank=True)  # {code, message} when refused or failed

    class Meta:
        db_table = "schedule_fires"
        constraints = [models.UniqueConstraint(fields=["schedule", "fire_at"],
                                               condition=Q(manual=False),
                                               name="schedule_fire_once")]
        indexes = [models.Index(fields=["schedule", "-fire_at"]),
                   models.Index(fields=["run"], condition=Q(status="started"),
                                name="schedule_fire_under_way")]

    def __str__(self) -> str:
        return f"{self.schedule_id} @ {self.fire_at:%Y-%m-%d %H:%M}"
