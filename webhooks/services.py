"""Writes for webhook endpoints and deliveries: each audited, in its transaction.

Who may see an endpoint is the tenancy rule (:mod:`accounts.scoping`); the selectors here
apply it. A run's end makes its deliveries where the run ends (:mod:`runs.execution.store.pg_turn`:
in the turn's own statement, or with :func:`deliveries_for_run` in the transaction that ends it), so
an end is never committed without them.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from functools import partial
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from accounts.audit import audit_record
from accounts.models import AuditAction, Member, Role
from accounts.scoping import get_visible, visible_to
from agents.models import Agent
from hango_project.config import hango
from webhooks import secrets, tasks
from webhooks.models import RUN_EVENTS, Delivery, Endpoint, Event

ENDPOINT_FIELDS = ("url", "description", "agent", "events", "active")
# Whose endpoints hear of every run they name or their agent's; a member's only of the runs of
# their own sessions (what the tenancy rule lets each see).
WHOLE_TENANT = (Role.OWNER, Role.ADMIN)


def endpoint_list(*, member: Member) -> QuerySet[Endpoint]:
    return visible_to(Endpoint.objects.all(), member).order_by("-created_at")


def endpoint_get(*, member: Member, endpoint_id: uuid.UUID | str) -> Endpoint:
    return get_visible(Endpoint.objects.all(), member, endpoint_id, what="Webhook")


def delivery_list(*, endpoint: Endpoint) -> QuerySet[Delivery]:
    """``endpoint`` comes from :func:`endpoint_get`: whoever sees it sees its deliveries."""
    return Delivery.objects.filter(endpoint=endpoint).order_by("-created_at", "-id")


def delivery_get(*, member: Member, endpoint: Endpoint,
                 delivery_id: uuid.UUID | str) -> Delivery:
    return get_visible(Delivery.objects.filter(endpoint=endpoint), member, delivery_id,
                       what="Delivery")


@transaction.atomic
def endpoint_create(*, member: Member, data: dict[str, Any]) -> tuple[Endpoint, str]:
    """A new endpoint and its secret (shown to the caller once, kept sealed)."""
    secret = secrets.make()
    fields = {k: v for k, v in data.items() if k in ENDPOINT_FIELDS}
    fields.setdefault("events", list(RUN_EVENTS))
    endpoint = Endpoint.objects.create(tenant_id=member.tenant_id, member=member,
                                       secret=secrets.seal(secret), **fields)
    audit_record(actor=member, tenant=member.tenant_id, action=AuditAction.WEBHOOK_CREATE,
                 obj_type="webhook", obj_id=endpoint.pk, detail=_described(endpoint))
    return endpoint, secret


@transaction.atomic
def endpoint_update(*, endpoint: Endpoint, data: dict[str, Any], actor: Member) -> Endpoint:
    changed = [k for k in ENDPOINT_FIELDS if k in data]
    for name in changed:
        setattr(endpoint, name, data[name])
    endpoint.save()
    audit_record(actor=actor, tenant=endpoint.tenant_id, action=AuditAction.WEBHOOK_UPDATE,
                 obj_type="webhook", obj_id=endpoint.pk, detail={"fields": changed})
    return endpoint


@transaction.atomic
def endpoint_delete(*, endpoint: Endpoint, actor: Member) -> None:
    audit_record(actor=actor, tenant=endpoint.tenant_id, action=AuditAction.WEBHOOK_DELETE,
                 obj_type="webhook", obj_id=endpoint.pk, detail=_described(endpoint))
    endpoint.delete()


@transaction.atomic
def endpoint_rotate(*, endpoint: Endpoint, actor: Member) -> tuple[Endpoint, str]:
    """A new secret (shown once); the previous one still signs for
    ``HANGO_WEBHOOK_SECRET_OVERLAP_SECONDS``, so receivers can switch without missing one."""
    secret = secrets.make()
    overlap = hango().webhook_secret_overlap_seconds
    endpoint.previous_secret = endpoint.secret if overlap else ""
    endpoint.previous_secret_expires_at = (timezone.now() + timedelta(seconds=overlap)
                                           if overlap else None)
    endpoint.secret = secrets.seal(secret)
    endpoint.save()
    audit_record(actor=actor, tenant=endpoint.tenant_id, action=AuditAction.WEBHOOK_ROTATE,
                 obj_type="webhook", obj_id=endpoint.pk,
                 detail={"previous_signs_until": endpoint.previous_secret_expires_at.isoformat()
                         if endpoint.previous_secret_expires_at else None})
    return endpoint, secret


def ping(*, endpoint: Endpoint, actor: Member) -> Delivery:
    """A ``webhook.ping`` delivery, sent at once (its outcome in the delivery log)."""
    with transaction.atomic():
        delivery = Delivery.objects.create(
            tenant_id=endpoint.tenant_id, endpoint=endpoint, event=Event.PING,
            data={"webhook": str(endpoint.pk)}, next_attempt_at=timezone.now())
        audit_record(actor=actor, tenant=endpoint.tenant_id, action=AuditAction.WEBHOOK_PING,
                     obj_type="webhook", obj_id=endpoint.pk, detail={"delivery": str(delivery.pk)})
        transaction.on_commit(lambda: tasks.send(delivery.pk))
    return delivery


def deliveries_for_run(*, tenant_id: uuid.UUID, agent_id: uuid.UUID, event: str,
                       run_id: uuid.UUID, data: dict[str, Any], session_member_id: uuid.UUID,
                       also: uuid.UUID | None = None) -> list[uuid.UUID]:
    """In the caller's transaction, one delivery of ``event`` per active endpoint that wants
    it and whose owner may see the run (an owner's or admin's, or the session's member's): the
    agent's, and ``also`` (the endpoint the run names); each sent once the transaction
    commits. The ORM twin of the turn statement's ``webhooked`` step."""
    wanted = Q(agent_id=agent_id) | (Q(pk=also) if also is not None else Q(pk__in=[]))
    sees = Q(member__role__in=WHOLE_TENANT) | Q(member_id=session_member_id)
    now = timezone.now()
    endpoints = Endpoint.objects.filter(wanted, sees, tenant_id=tenant_id, active=True)
    made = [Delivery.objects.create(tenant_id=tenant_id, endpoint=endpoint, event=event,
                                    run_id=run_id, data=data, next_attempt_at=now)
            for endpoint in endpoints if event in endpoint.events]
    for delivery in made:
        transaction.on_commit(partial(tasks.send, delivery.pk))
    return [d.pk for d in made]


def _described(endpoint: Endpoint) -> dict[str, Any]:
    """What the audit log says of an endpoint: its URL's scheme and host only (a receiver may
    put a token in its path or query), its agent and events."""
    parts = urlsplit(endpoint.url)
    return {"url": urlunsplit((parts.scheme, parts.hostname or "", "", "", "")),
            "agent": str(endpoint.agent_id) if endpoint.agent_id else None,
            "events": list(endpoint.events)}


def agent_of(member: Member, agent_id: uuid.UUID | str) -> Agent:
    """The agent an endpoint names, as the member may see it (404 otherwise)."""
    return get_visible(Agent.objects.all(), member, agent_id, what="Agent")
