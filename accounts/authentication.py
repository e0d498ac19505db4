"""``Authorization: Bearer <key>`` for DRF."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

from django.utils import timezone
from rest_framework import authentication, exceptions

from accounts import keys
from accounts.models import ApiKey
from hango_project.config import hango

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
            api_key = (
                ApiKey.objects.select_related("member__tenant", "member__user")
                .filter(prefix=prefix)
                .first()
            )
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
