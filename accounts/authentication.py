"""The API's two credentials, for DRF: ``Authorization: Bearer <key>`` (every client: the CLI,
scripts, other services), and the Django admin's login session of a staff user (the admin's
own screens, such as the Context panel, which call the public API from the browser).

Both leave the caller's member on ``request.auth.member`` — the key's member, or the staff user's
member of the tenant the request names — so what the caller may see is still decided in one
place, :mod:`accounts.scoping`.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from django.utils import timezone
from rest_framework import authentication, exceptions, status

from accounts import keys
from accounts.key_lookup import key_by_prefix
from accounts.models import ApiKey, Member
from hango_project.config import hango
from hango_project.errors import ApplicationError

if TYPE_CHECKING:
    from django.contrib.auth.models import User
    from rest_framework.request import Request


class ApiKeyAuthentication(authentication.BaseAuthentication):
    """Resolves a bearer key to ``(user, api_key)``; ``request.auth.member`` is the caller.

    Revocation is read from the database on every request, so a revoked key fails on the very
    next one.
    """

    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[User, ApiKey] | None:
        header = authentication.get_authorization_header(request).decode("latin-1")
        if not header:
            return None
        scheme, _, presented = header.partition(" ")
        if scheme.lower() != self.keyword.lower() or not presented.strip():
            raise exceptions.AuthenticationFailed("Use 'Authorization: Bearer <key>'.")
        presented = presented.strip()
        prefix = keys.parse_prefix(presented)
        api_key = None
        if prefix is not None:
            api_key = key_by_prefix(prefix)
        if api_key is None or not keys.matches(presented, api_key.secret_hash):
            raise exceptions.AuthenticationFailed("The API key is not valid.")
        if api_key.revoked_at is not None:
            raise exceptions.AuthenticationFailed("The API key has been revoked.")
        if not api_key.member.user.is_active:
            raise exceptions.AuthenticationFailed("The key's user is inactive.")
        self._touch(api_key)
        return api_key.member.user, api_key

    def authenticate_header(self, request: Request) -> str:
        return self.keyword

    @staticmethod
    def _touch(api_key: ApiKey) -> None:
        # One UPDATE per key per resolution window, not one per request.
        now = timezone.now()
        window = timedelta(seconds=hango().key_last_used_resolution_seconds)
        if api_key.last_used_at is None or now - api_key.last_used_at >= window:
            ApiKey.objects.filter(pk=api_key.pk).update(last_used_at=now)
            api_key.last_used_at = now


# The request header naming the tenant a staff user's login session acts in (its WSGI name).
TENANT_HEADER = "X-Hango-Tenant"
_TENANT_META = "HTTP_X_HANGO_TENANT"


@dataclass(frozen=True)
class StaffSession:
    """``request.auth`` of a staff user's login session: the user's member of the tenant the
    request acts in (what an :class:`~accounts.models.ApiKey` gives for a key)."""

    member: Member


def caller(request: Request) -> Member:
    """The member behind the request: its API key's, or a staff user's member of the tenant
    the login session acts in (authentication guarantees there is one)."""
    credential = request.auth
    assert isinstance(credential, ApiKey | StaffSession)
    return credential.member


# ``detail``: the error shape's object here; DRF's own handling never reads it (the project's
# handler renders an ApplicationError first).
class SessionRefused(ApplicationError, exceptions.APIException):  # type: ignore[misc]
    """A login session the API does not take, in the one error shape. An APIException too, so
    DRF leaves the request unauthenticated, as it does for a refused key."""

    status_code: int = status.HTTP_403_FORBIDDEN
    code = "permission_denied"

    def __init__(self, message: str, *, code: str | None = None,
                 status_code: int | None = None, detail: dict[str, Any] | None = None) -> None:
        super().__init__(message, detail=detail)
        self.code = code or self.code
        self.status_code = status_code or self.status_code


class StaffSessionAuthentication(authentication.SessionAuthentication):
    """The Django login session of an active staff user, CSRF-checked on unsafe methods (the
    ``X-CSRFToken`` header), acting as the user's member of the tenant named by the
    ``X-Hango-Tenant: <tenant id>`` header — optional when the user belongs to one tenant only.

    A key in the request wins (it is authenticated first); a request without a login session
    is left to the other authenticators. A non-staff user, a failed CSRF check, and a tenant the
    user is not a member of are refused with a clear error, never taken as anonymous.
    """

    def authenticate(self, request: Request) -> tuple[User, StaffSession] | None:
        user = getattr(request._request, "user", None)
        if user is None or not user.is_active:
            return None
        if not user.is_staff:
            raise SessionRefused(
                "Only staff users may call the API with their login session; other callers "
                "send 'Authorization: Bearer <key>'.", code="staff_only")
        self.enforce_csrf(request)
        return user, StaffSession(member=_member_of(user, request.META.get(_TENANT_META)))

    def enforce_csrf(self, request: Request) -> None:
        try:
            super().enforce_csrf(request)
        except exceptions.PermissionDenied as exc:
            raise SessionRefused(
                f"{exc.detail} Send the csrftoken cookie's value in the X-CSRFToken header.",
                code="csrf_failed") from None


def _member_of(user: User, header: str | None) -> Member:
    members = Member.objects.select_related("tenant", "user").filter(user=user)
    if header is not None:
        try:
            tenant_id = uuid.UUID(header.strip())
        except ValueError:
            raise SessionRefused(f"{TENANT_HEADER} is a tenant id (a UUID).",
                                 code="invalid_tenant", status_code=status.HTTP_400_BAD_REQUEST,
                                 detail={"header": TENANT_HEADER}) from None
        member = members.filter(tenant_id=tenant_id).first()
        if member is None:
            raise SessionRefused(f"You ({user.get_username()}) are not a member of the tenant "
                                 f"{TENANT_HEADER} names.", code="not_a_member",
                                 detail={"tenant": str(tenant_id)})
        return member
    found = list(members.order_by("tenant__name")[:2])
    if not found:
        raise SessionRefused(f"You ({user.get_username()}) are not a member of any tenant.",
                             code="not_a_member")
    if len(found) > 1:
        tenants = [{"id": str(m.tenant_id), "name": m.tenant.name}
                   for m in members.order_by("tenant__name")]
        raise SessionRefused(f"You are a member of several tenants: name one in the "
                             f"{TENANT_HEADER} header.", code="tenant_required",
                             status_code=status.HTTP_400_BAD_REQUEST,
                             detail={"tenants": tenants})
    return found[0]
