"""Tenants, their members and the members' API keys."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q


class Tenant(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=100, unique=True)
    trace_llm_content = models.BooleanField(
        default=False, help_text="Allow message content on telemetry spans for this tenant."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "tenants"
        constraints = [models.CheckConstraint(condition=~Q(name=""), name="tenant_name_not_empty")]

    def __str__(self) -> str:
        return self.name


class Role(models.TextChoices):
    OWNER = "owner"
    ADMIN = "admin"
    MEMBER = "member"


class Member(models.Model):
    """A Django user's membership of one tenant, with a role."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="members")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.MEMBER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "members"
        constraints = [
            models.UniqueConstraint(fields=["tenant", "user"], name="member_unique_per_tenant"),
            models.CheckConstraint(condition=Q(role__in=Role.values), name="member_role_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.user} @ {self.tenant} ({self.role})"

    @property
    def sees_whole_tenant(self) -> bool:
        """Owners and admins see every object of their tenant; members only their own."""
        return self.role in (Role.OWNER, Role.ADMIN)


class ApiKey(models.Model):
    """A bearer key. Only its prefix (for lookup) and a SHA-512 digest of the key are stored."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    member = models.ForeignKey(Member, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=100, blank=True, default="")
    prefix = models.CharField(max_length=16, unique=True)
    secret_hash = models.CharField(max_length=128)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "api_keys"

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.name or 'unnamed'})"

    @property
    def revoked(self) -> bool:
        return self.revoked_at is not None
