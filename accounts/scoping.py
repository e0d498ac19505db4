"""Who may see what: the one tenancy rule every read and write goes through.

A member sees the objects they own; owners and admins see every object of their tenant; anything
else does not exist for them (404, the same body as a missing id, and absent from every list).
Each tenant-owned model names the paths to its tenant and to its owning member in a
``tenancy`` class attribute, so the rule itself is written once, here.
"""

from __future__ import annotations

import uuid
from typing import Any, TypeVar

from django.db import connection, models

from accounts.models import Member
from accounts.tenancy import Tenancy
from hango_project.errors import NotFound
from hango_project.rows import select_one

M = TypeVar("M", bound=models.Model)


def visible_to(queryset: models.QuerySet[M], member: Member) -> models.QuerySet[M]:
    rule: Tenancy = queryset.model.tenancy  # type: ignore[attr-defined]
    queryset = queryset.filter(**{rule.tenant: member.tenant_id})
    if rule.owner is not None and not member.sees_whole_tenant:
        queryset = queryset.filter(**{rule.owner: member.pk})
    return queryset


def _key(pk: object, what: str) -> uuid.UUID:
    try:
        return pk if isinstance(pk, uuid.UUID) else uuid.UUID(str(pk))
    except ValueError:
        raise NotFound(f"{what} not found.") from None


def get_visible(queryset: models.QuerySet[M], member: Member, pk: object, *, what: str) -> M:
    """One object the member may see, or :class:`NotFound` — for a missing id, a malformed id and
    somebody else's object alike."""
    obj = visible_to(queryset, member).filter(pk=_key(pk, what)).first()
    if obj is None:
        raise NotFound(f"{what} not found.")
    return obj


def get_visible_row(model: type[M], member: Member, pk: object, *, what: str) -> M:
    """:func:`get_visible` as one plain statement (:mod:`hango_project.rows`), for a model whose
    rule names columns of its own: a message post's session, read on every post, where
    compiling the ORM's query was a tenth of the post's web CPU."""
    rule: Tenancy = model.tenancy  # type: ignore[attr-defined]
    meta = model._meta
    where: list[tuple[Any, object]] = [(meta.pk, _key(pk, what)),
                                       (meta.get_field(rule.tenant), member.tenant_id)]
    if rule.owner is not None and not member.sees_whole_tenant:
        where.append((meta.get_field(rule.owner), member.pk))
    sql = " AND ".join(f"{connection.ops.quote_name(f.column)} = %s" for f, _ in where)
    obj = select_one(model, sql, [f.get_db_prep_value(v, connection) for f, v in where])
    if obj is None:
        raise NotFound(f"{what} not found.")
    return obj
