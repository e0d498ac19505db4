"""A context override: one part of an agent's or a session's model requests, excluded or
replaced (:mod:`harness.context` says what each does and where it applies)."""

from __future__ import annotations

import uuid

from django.db import models
from django.db.models import Q

from accounts.models import Member, Tenant
from agents.models import Agent


class OverrideAction(models.TextChoices):
    EXCLUDE = "exclude"
    REPLACE = "replace"


class ContextOverride(models.Model):
    """Agent-level (``system:*`` and ``tool:*`` parts, every session of the agent) or
    session-level (``message:*`` and ``summary``): exactly one of the two targets is set.

    No tenancy rule of its own: an override is only ever reached through its agent or session,
    which the caller must be allowed to see (``agents.selectors.agent_get``,
    ``runs.intake.selectors.session_get``)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="context_overrides")
    agent = models.ForeignKey(Agent, null=True, blank=True, on_delete=models.CASCADE,
                              related_name="context_overrides")
    # Named, not imported: runs, which applies the overrides, sits above this app.
    session = models.ForeignKey("runs.Session", null=True, blank=True,
                                on_delete=models.CASCADE, related_name="context_overrides")
    part = models.CharField(max_length=1100)
    action = models.CharField(max_length=16, choices=OverrideAction.choices)
    # NULL, not "", for an exclude: a replacement may be empty text.
    replacement = models.TextField(null=True, blank=True)  # noqa: DJ001
    # Kept when the member leaves: the override belongs to the agent or session it shapes.
    created_by = models.ForeignKey(Member, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="context_overrides")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "context_overrides"
        ordering = ["created_at", "part"]
        constraints = [
            models.CheckConstraint(
                condition=(Q(agent__isnull=False, session__isnull=True)
                           | Q(agent__isnull=True, session__isnull=False)),
                name="context_override_one_target"),
            models.CheckConstraint(
                condition=(Q(action=OverrideAction.REPLACE, replacement__isnull=False)
                           | Q(action=OverrideAction.EXCLUDE, replacement__isnull=True)),
                name="context_override_replacement_iff_replace"),
            models.CheckConstraint(
                condition=(Q(agent__isnull=True) | Q(part__startswith="system:")
                           | Q(part__startswith="tool:")),
                name="context_override_agent_parts"),
            models.CheckConstraint(
                condition=(Q(session__isnull=True) | Q(part__startswith="message:")
                           | Q(part="summary")),
                name="context_override_session_parts"),
            models.UniqueConstraint(fields=["tenant", "agent", "part"],
                                    condition=Q(agent__isnull=False),
                                    name="context_override_agent_part_unique"),
            models.UniqueConstraint(fields=["tenant", "session", "part"],
                                    condition=Q(session__isnull=False),
                                    name="context_override_session_part_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.action} {self.part}"
