"""A tenant's negotiated prices: read by every member (their usage is costed with them), set
and removed by owners and admins, each write audited in its own transaction.

A price names a model as agents do, ``<provider>:<model>``, and applies to the calls recorded
while it exists (:mod:`accounts.prices`); rows recorded before keep the price they were
recorded with, so setting or removing one never rewrites what was spent.
"""

from __future__ import annotations

import uuid
from decimal import Decimal

from django.db import transaction
from django.db.models import QuerySet
from rest_framework import status

from accounts.audit import audit_record
from accounts.models import AuditAction, Member, TenantPrice
from accounts.prices import RATES
from accounts.scoping import visible_to
from hango_project.errors import ApplicationError, NotFound, Unprocessable
from harness.errors import UnknownModel
from harness.providers.registry import split_model


class PricesNotWritable(ApplicationError):
    """Members may read the tenant's prices (their usage is costed with them) but not set them:
    the role is refused, 403, not the price hidden."""

    status_code = status.HTTP_403_FORBIDDEN
    code = "permission_denied"
    message = "Only the tenant's owners and admins may set or remove its prices."


def model_parts(model: str) -> tuple[str, str]:
    """``<provider>:<model>`` as (provider, model), or 422 naming the providers."""
    try:
        return split_model(model)
    except UnknownModel as exc:
        raise Unprocessable(str(exc), detail={"model": model}) from None


def price_list(*, member: Member) -> QuerySet[TenantPrice]:
    return visible_to(TenantPrice.objects.all(), member).order_by("-created_at", "-id")


def price_get(*, member: Member, model: str) -> TenantPrice:
    """The tenant's price for ``model``, or 404 (none set, another tenant's, a malformed name)."""
    provider, _, name = model.partition(":")
    found = price_list(member=member).filter(provider=provider, model=name).first()
    if found is None:
        raise NotFound(f"The tenant has no price for {model!r}.")
    return found


def check_writer(member: Member) -> None:
    """Only owners and admins set or remove a price (403 for a member's role)."""
    if not member.sees_whole_tenant:
        raise PricesNotWritable()


def price_set(*, tenant_id: uuid.UUID, model: str, currency: str, rates: dict[str, Decimal],
              actor: Member | None) -> tuple[TenantPrice, bool]:
    """Set the tenant's price for ``model`` (all four rates, per million tokens); returns it and
    whether it is new. ``actor`` is who set it: the API's caller (an owner or admin:
    :func:`check_writer`), the staff user's member of the tenant from the Django admin, or
    nobody."""
    provider, name = model_parts(model)
    with transaction.atomic():
        price, created = TenantPrice.objects.select_for_update().get_or_create(
            tenant_id=tenant_id, provider=provider, model=name,
            defaults={"currency": currency, **rates})
        changed = sorted(RATES) if created else sorted(
            field for field, value in (("currency", currency), *rates.items())
            if getattr(price, field) != value)
        if not created and changed:
            price.currency = currency
            for field, value in rates.items():
                setattr(price, field, value)
            price.save()
        if created or changed:
            audit_record(actor=actor, tenant=tenant_id, action=AuditAction.PRICE_SET,
                         obj_type="price", obj_id=price.pk,
                         detail={"model": model, "created": created, "changed": changed})
    return price, created


def price_delete(*, price: TenantPrice, actor: Member | None) -> None:
    """Remove the tenant's price: the table prices the model's next calls again."""
    with transaction.atomic():
        price_id = price.pk  # the delete clears it
        price.delete()
        audit_record(actor=actor, tenant=price.tenant_id, action=AuditAction.PRICE_DELETE,
                     obj_type="price", obj_id=price_id,
                     detail={"model": f"{price.provider}:{price.model}"})
