"""The audit log: one row per successful write (and per refused trigger message: its reason,
:mod:`runs.intake.triggers`), and the owners' and admins' read of it.

Every write service calls :func:`audit_record` inside the transaction of its write, so a write
that fails (and rolls back) leaves no row, and a row never outlives the write it describes. A
row's ``detail`` names what changed — field names, ids, a key's prefix, an approval's decision
types and tool names — and never holds secrets, message content or replacement text. Rows are
only ever inserted: the API reads them (owners and admins), nothing changes or deletes one.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from rest_framework import status

from accounts.models import AuditAction, AuditEntry, Member, Tenant
from accounts.scoping import visible_to
from hango_project.errors import ApplicationError
from hango_project.rows import insert

# The keys a detail may never carry, at any depth: a safety net behind each caller's choice.
FORBIDDEN_DETAIL_KEYS = frozenset({
    "content", "text", "message", "input", "replacement", "plaintext", "secret", "secret_hash",
    "key", "system_prompt", "instructions",
})


class AuditNotReadable(ApplicationError):
    """Members may not read the audit log. They know it exists (it is a route, not an object),
    so the authorization rule answers 403 for the role, not 404."""

    status_code = status.HTTP_403_FORBIDDEN
    code = "permission_denied"
    message = "Only the tenant's owners and admins may read the audit log."


def _check_detail(value: Any, where: str = "detail") -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str) or k in FORBIDDEN_DETAIL_KEYS:
                raise ValueError(f"{where} may not hold the key {k!r}")
            _check_detail(v, f"{where}.{k}")
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            _check_detail(v, f"{where}[{i}]")
    elif value is not None and not isinstance(value, str | int | float | bool):
        raise ValueError(f"{where} holds a {type(value).__name__}, not plain JSON")


def audit_record(
    *,
    actor: Member | None,
    tenant: Tenant | uuid.UUID | str,
    action: AuditAction,
    obj_type: str,
    obj_id: object,
    detail: dict[str, Any] | None = None,
) -> AuditEntry:
    """Record one successful write. Call it inside the write's own ``transaction.atomic`` block
    (after the write itself), so the row commits or rolls back with it."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("audit_record must run inside the transaction of the write it records")
    # A plain INSERT built once (hango_project.rows): every write makes one, a message post
    # included, where compiling the ORM's was a fifteenth of the post's web CPU.
    return insert(audit_entry(actor=actor, tenant=tenant, action=action, obj_type=obj_type,
                              obj_id=obj_id, detail=detail))


def audit_entry(
    *,
    actor: Member | None,
    tenant: Tenant | uuid.UUID | str,
    action: AuditAction,
    obj_type: str,
    obj_id: object,
    detail: dict[str, Any] | None = None,
) -> AuditEntry:
    """The row :func:`audit_record` inserts, checked and unsaved: for a write that inserts it
    in its own statement (a message post: :mod:`runs.execution.store.pg_start`), in the same
    transaction."""
    action = AuditAction(action)  # the closed set: anything else is a bug
    detail = dict(detail or {})
    _check_detail(detail)
    tenant_id = tenant.pk if isinstance(tenant, Tenant) else tenant
    return AuditEntry(tenant_id=tenant_id, actor=actor, action=action, object_type=obj_type,
                      object_id=str(obj_id), detail=detail)


def audit_list(
    *,
    member: Member,
    action: str | None = None,
    object_type: str | None = None,
    since: datetime | None = None,
) -> QuerySet[AuditEntry]:
    """The tenant's audit rows for an owner or admin (newest first); a member's role may not
    read them (403)."""
    if not member.sees_whole_tenant:
        raise AuditNotReadable()
    rows = visible_to(AuditEntry.objects.all(), member)
    if action:
        rows = rows.filter(action=action)
    if object_type:
        rows = rows.filter(object_type=object_type)
    if since is not None:
        rows = rows.filter(created_at__gte=since)
    return rows.order_by("-created_at", "-id")
