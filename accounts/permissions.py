from rest_framework.permissions import BasePermission

from accounts.models import ApiKey


class IsTenantMember(BasePermission):
    """Every API route needs a valid key; what the caller may see is decided by scoping."""

    def has_permission(self, request, view) -> bool:  # type: ignore[no-untyped-def]
        return isinstance(request.auth, ApiKey)
