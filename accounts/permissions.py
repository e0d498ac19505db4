from __future__ import annotations

from typing import TYPE_CHECKING

from rest_framework.permissions import BasePermission

from accounts.authentication import StaffSession
from accounts.models import ApiKey

if TYPE_CHECKING:
    # Not at run time: rest_framework.views imports this module (a default permission class).
    from rest_framework.request import Request
    from rest_framework.views import APIView


class IsTenantMember(BasePermission):
    """Every API route needs a valid key or a staff user's login session acting as a member;
    what the caller may see is decided by scoping."""

    def has_permission(self, request: Request, view: APIView) -> bool:
        return isinstance(request.auth, ApiKey | StaffSession)
