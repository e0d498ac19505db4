"""Who may see what: the one tenancy rule every read and write goes through.

A member sees the objects they own; owners and admins see every object of their tenant; anything
else does not exist for them (404, the same body as a missing id, and absent from every list).
Each tenant-owned model names the paths to its tenant and to its owning member in a
``tenancy`` class attribute, so the rule itself is written once, here.
"""

from __future__ import annotations

import uuid
from typing import TypeVar

from django.db import models

from accounts.models import Member
from accounts.tenancy import Tenancy
from hango_project.errors import NotFound

M = TypeVar("M", bound=models.Model)


def visible_to(queryset: models.QuerySet[M], member: Member) -> models.QuerySet[M]:
    rule: Tenancy = queryset.model.tenancy  # type: ignore[attr-defined]
    queryset = queryset.filter(**{rule.tenant: member.tenant_id})
    if rule.owner is not None and not member.sees_whole_tenant:
        queryset = queryset.filter(**{rule.owner: member.pk})
    return queryset


def get_visible(queryset: models.QuerySet[M], member: Member, pk: object, *, what: str) -> M:
    """One object the member may see, or :class:`NotFound` — for a missing id, a malformed id and
    somebody else's object alike."""
    try:
        key = pk if isinstance(pk, uuid.UUID) else uuid.UUID(str(pk))
    except ValueError:
        raise NotFound(f"{what} not found.") from None
    obj = visible_to(queryset, member).filter(pk=key).first()
    if obj is None:
        raise NotFound(f"{what} not found.")
    return obj
