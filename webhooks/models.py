"""A tenant's webhook endpoints and the deliveries made to them."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from accounts.models import Member, Tenant
from accounts.tenancy import Tenancy
from agents.models import Agent
from hango_project.ids import time_ordered_uuid


class Event(models.TextChoices):
    """What an endpoint can be told: a run's end (or its park for approval or for the
    caller's client tool results), and a ping."""

    RUN_COMPLETED = "run.completed"
    RUN_FAILED = "run.failed"
    RUN_CANCELLED = "run.cancelled"
    RUN_AWAITING_APPROVAL = "run.awaiting_approval"
    RUN_REQUIRES_ACTION = "run.requires_action"
    PING = "webhook.ping"


RUN_EVENTS = [e.value for e in Event if e is not Event.PING]


class Endpoint(models.Model):
    """Where a tenant wants to hear of runs ending: the runs of ``agent`` (or of no agent in
    particular: the runs of the triggers that name it). The signing secret is kept encrypted
    (:mod:`webhooks.secrets`), shown once when made; after a rotation the previous one still
    signs until ``previous_secret_expires_at``."""

    tenancy = Tenancy(tenant="tenant", owner="member")

    id = models.UUIDField(primary_key=True, default=time_ordered_uuid, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="webhooks")
    member = models.ForeignKey(Member, on_delete=models.CASCADE, related_name="webhooks")
    url = models.URLField(max_length=2000)
    description = models.CharField(max_length=200, blank=True, default="")
    agent = models.ForeignKey(Agent, null=True, blank=True, on_delete=models.CASCADE,
                              related_name="webhooks")
    events = models.JSONField(default=list)  # a subset of RUN_EVENTS
    active = models.BooleanField(default=True)
    secret = models.TextField()  # encrypted
    previous_secret = models.TextField(blank=True, default="")  # encrypted; "" when none
    previous_secret_expires_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "webhook_endpoints"
        verbose_name = "webhook endpoint"
        indexes = [models.Index(fields=["agent"], condition=Q(active=True),
                                name="webhook_active_by_agent")]

    def __str__(self) -> str:
        return self.url


class DeliveryStatus(models.TextChoices):
    PENDING = "pending"  # not sent yet, or to be sent again at next_attempt_at
    SUCCEEDED = "succeeded"  # a 2xx answer
    FAILED = "failed"  # every attempt failed, or refused before sending (a private address)


class Delivery(models.Model):
    """One event for one endpoint, with what its attempts found. ``id`` is the message's
    ``webhook-id``: the same for every attempt, so a receiver can drop a repeat."""

    tenancy = Tenancy(tenant="tenant", owner="endpoint__member")

    id = models.UUIDField(primary_key=True, default=time_ordered_uuid, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    endpoint = models.ForeignKey(Endpoint, on_delete=models.CASCADE, related_name="deliveries")
    event = models.CharField(max_length=40, choices=Event.choices)
    run_id = models.UUIDField(null=True, blank=True)  # a reference kept after the run goes
    data = models.JSONField(default=dict)  # the event's ``data``
    status = models.CharField(max_length=16, choices=DeliveryStatus.choices,
                              default=DeliveryStatus.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    last_status_code = models.PositiveIntegerField(null=True, blank=True)
    last_error = models.CharField(max_length=500, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "webhook_deliveries"
        verbose_name_plural = "deliveries"
        indexes = [
            models.Index(fields=["endpoint", "-created_at"]),
            # What the reconciler sends again: pending deliveries by when they are due.
            models.Index(fields=["next_attempt_at"], condition=Q(status="pending"),
                         name="webhook_delivery_due"),
        ]

    def __str__(self) -> str:
        return f"{self.event} → {self.endpoint_id}"

    @property
    def message_id(self) -> str:
        return f"msg_{self.id.hex}"
