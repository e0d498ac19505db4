"""An agent: a system prompt, a model, the tools it may use and its middleware options."""

from __future__ import annotations

import uuid

from django.db import models
from django.db.models import Q

from accounts.models import Member, Tenant
from accounts.scoping import Tenancy

PROVIDERS = ("anthropic", "openai", "scripted")
# "<provider>:<model name>"; the model name is the provider's own identifier.
MODEL_PATTERN = r"^(anthropic|openai|scripted):[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,199}$"


class Agent(models.Model):
    tenancy = Tenancy(tenant="tenant", owner="owner")

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="agents")
    owner = models.ForeignKey(Member, on_delete=models.CASCADE, related_name="agents")
    name = models.CharField(max_length=100)
    description = models.TextField(blank=True, default="")
    system_prompt = models.TextField(blank=True, default="")
    model = models.CharField(max_length=210)
    allowed_tools = models.JSONField(
        null=True, blank=True, help_text="Tool names this agent may use; null means all."
    )
    config = models.JSONField(default=dict, blank=True, help_text="Middleware options.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "agents"
        indexes = [models.Index(fields=["tenant", "owner", "-created_at"])]
        constraints = [
            models.CheckConstraint(condition=~Q(name=""), name="agent_name_not_empty"),
            models.CheckConstraint(
                condition=Q(model__regex=MODEL_PATTERN), name="agent_model_valid"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def provider(self) -> str:
        return self.model.split(":", 1)[0]
