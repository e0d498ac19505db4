"""Credentials: secrets an MCP server's headers name, set and removed (each audited), listed by
name only, and opened when a session to a server is made.

A value is sealed (:mod:`hango_project.sealing`), not hashed: hango must send it, so it must be
able to read it back, as with a webhook's signing secret. It leaves the database only to go into
a request's headers: no answer, log line, audit detail, span, event or admin page holds it.

Who sees and writes what: every member sees the names of the tenant's credentials and of their
own, never another member's (whatever their role: nobody needs another's secret, even by
name). Owners and admins set and remove the tenant's; each member sets and removes their own,
which stands in for the tenant's of the same name in that member's runs.
"""

from __future__ import annotations

import re
import uuid
from functools import partial
from typing import Literal

from django.db import transaction
from django.db.models import Q, QuerySet
from django.dispatch import Signal
from rest_framework import status

from accounts.audit import audit_record
from accounts.models import AuditAction, Member
from hango_project import sealing
from hango_project.errors import ApplicationError, NotFound, Unprocessable
from integrations.models import CREDENTIAL_NAME_PATTERN, Credential

Scope = Literal["tenant", "member"]
SCOPES: tuple[Scope, ...] = ("tenant", "member")
MAX_VALUE = 8192
# A value goes into request headers, which the HTTP client sends as ASCII: visible characters,
# spaces and tabs only (a line break would end the header; anything else fails the connect).
_NOT_IN_A_HEADER = re.compile(r"[^\t\x20-\x7e]")
UNREADABLE = "sealed under another DJANGO_SECRET_KEY: set it again"


class CredentialsNotWritable(ApplicationError):
    """A member sees the tenant's credentials by name but may not set or remove them: the
    role is refused (403), nothing hidden."""

    status_code = status.HTTP_403_FORBIDDEN
    code = "permission_denied"
    message = ("Only the tenant's owners and admins set or remove its credentials; set your "
               "own with ?scope=member.")


def name_problem(name: str) -> str | None:
    if not re.match(CREDENTIAL_NAME_PATTERN, name) or "\n" in name:
        return "A credential's name is lowercase letters, digits and . _ - (at most 64)."
    return None


def value_problem(value: str) -> str | None:
    if not 1 <= len(value) <= MAX_VALUE:
        return f"1 to {MAX_VALUE} characters."
    if _NOT_IN_A_HEADER.search(value):
        return ("A credential goes into request headers: visible ASCII characters, spaces and "
                "tabs only (no line breaks, control characters or non-ASCII characters).")
    if value != value.strip(" \t"):  # the HTTP client refuses it, quoting it in its error
        return "A credential goes into request headers: no space or tab at either end."
    return None


def credential_list(*, member: Member) -> QuerySet[Credential]:
    """The tenant's credentials and the member's own, by name (the tenant's first)."""
    return Credential.objects.filter(
        Q(member__isnull=True) | Q(member=member), tenant_id=member.tenant_id,
    ).order_by("name", "member_id")


def credential_get(*, member: Member, name: str, scope: Scope) -> Credential:
    if name_problem(name):  # no such name is stored (and PostgreSQL takes no NUL)
        raise NotFound(f"No {scope} credential named {name!r}.")
    found = credential_list(member=member).filter(
        name=name, member__isnull=scope == "tenant").first()
    if found is None:
        raise NotFound(f"No {scope} credential named {name!r}.")
    return found


def check_writer(member: Member, scope: Scope) -> None:
    """The tenant's credentials are its owners' and admins' to write (403 for a member); a
    member's own, theirs."""
    if scope == "tenant" and not member.sees_whole_tenant:
        raise CredentialsNotWritable()


# Sent once a credential is set (committed): the runs that stopped for want of it go on
# (runs/intake/resumption.py; this app cannot import the runs above it).
credential_was_set = Signal()


def credential_set(*, tenant_id: uuid.UUID, owner: Member | None, name: str, value: str,
                   actor: Member | None) -> tuple[Credential, bool]:
    """Set the tenant's credential (``owner`` None) or ``owner``'s own; returns it and whether
    it is new. The API checks its caller may (:func:`check_writer`); the admin writes as the
    staff user's member of the tenant."""
    problems = {k: [p] for k, p in (("name", name_problem(name)),
                                    ("value", value_problem(value))) if p}
    if problems:
        raise Unprocessable(detail=problems)
    with transaction.atomic():
        credential, created = Credential.objects.select_for_update().get_or_create(
            tenant_id=tenant_id, member=owner, name=name,
            defaults={"value": sealing.seal(value), "created_by": actor})
        if not created:
            credential.value = sealing.seal(value)
            credential.save(update_fields=["value", "updated_at"])
        audit_record(actor=actor, tenant=tenant_id, action=AuditAction.CREDENTIAL_SET,
                     obj_type="credential", obj_id=credential.pk,
                     detail={"name": name, "scope": credential.scope, "created": created})
        transaction.on_commit(partial(credential_was_set.send, sender=Credential,
                                      tenant_id=tenant_id, member=owner, name=name, actor=actor),
                              robust=True)  # set is set: what follows cannot make it a 500
    return credential, created


def credential_delete(*, credential: Credential, actor: Member | None) -> None:
    with transaction.atomic():
        credential_id = credential.pk  # the delete clears it
        credential.delete()
        audit_record(actor=actor, tenant=credential.tenant_id,
                     action=AuditAction.CREDENTIAL_DELETE, obj_type="credential",
                     obj_id=credential_id,
                     detail={"name": credential.name, "scope": credential.scope})


def problem_of(credential: Credential) -> str | None:
    """Why the credential cannot be used (None: it can)."""
    try:
        sealing.unseal(credential.value)
    except sealing.Unreadable:
        return UNREADABLE
    return None


def values_for(*, tenant_id: uuid.UUID, member: Member | None,
               names: list[str]) -> dict[str, tuple[str | None, bool]]:
    """For each of ``names`` that is set: its value (None when it cannot be read, with why in
    :data:`UNREADABLE`) and whether it is the member's own."""
    if not names:
        return {}
    rows = Credential.objects.filter(tenant_id=tenant_id, name__in=names).filter(
        Q(member__isnull=True) | Q(member=member) if member is not None
        else Q(member__isnull=True))
    found: dict[str, tuple[str | None, bool]] = {}
    for row in sorted(rows, key=lambda r: r.member_id is not None):  # the member's own last
        try:
            value: str | None = sealing.unseal(row.value)
        except sealing.Unreadable:
            value = None
        found[row.name] = (value, row.member_id is not None)
    return found
