"""An agent: a system prompt, a model, the tools it may use and its middleware options."""

from __future__ import annotations

import uuid
from typing import Any

from django.db import models
from django.db.models import Q

from accounts.models import Member, Tenant
from accounts.scoping import Tenancy

PROVIDERS = ("anthropic", "openai", "scripted")
# "<provider>:<model name>"; the model name is the provider's own identifier.
MODEL_PATTERN = r"^(anthropic|openai|scripted):[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,199}$"
# A skill's name: a slug (lowercase letters and digits in hyphen-separated words).
SKILL_NAME_PATTERN = r"^[a-z0-9]+(?:-[a-z0-9]+)*$"


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
    # Its latest version's number and content hash (agents/versions.py), written with the
    # version in one transaction: a run of the latest version reads its content from this row.
    version = models.PositiveIntegerField(default=0, editable=False)
    content_hash = models.CharField(max_length=64, blank=True, default="", editable=False)
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


class AgentVersion(models.Model):
    """What a run of an agent executes, as it was at one change: immutable once written."""

    tenancy = Tenancy(tenant="agent__tenant", owner="agent__owner")

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="versions",
                              db_index=False)
    number = models.PositiveIntegerField()
    system_prompt = models.TextField(blank=True, default="")
    model = models.CharField(max_length=210)
    allowed_tools = models.JSONField(null=True, blank=True)
    config = models.JSONField(default=dict, blank=True)
    # sha256 of the content as canonical JSON (agents.versions.content_hash).
    content_hash = models.CharField(max_length=64)
    # Who made the change; null: the system (a data migration, a detached skill or server).
    author = models.ForeignKey(Member, null=True, blank=True, on_delete=models.SET_NULL,
                               related_name="+", db_index=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "agent_versions"
        ordering = ["agent", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["agent", "number"], name="agent_version_unique"),
            models.CheckConstraint(condition=Q(number__gte=1), name="agent_version_positive"),
        ]

    def __str__(self) -> str:
        return f"version {self.number}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise ValueError("An agent version is immutable: change the agent instead.")
        super().save(*args, **kwargs)


class PathFile(models.Model):
    """A text file at an absolute path, one per path of its owner (which each subclass adds,
    with the path's uniqueness and absoluteness as constraints of its own table)."""

    path = models.CharField(max_length=1024)
    content = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True

    def __str__(self) -> str:
        return self.path


class MemoryFile(PathFile):
    """One of an agent's memory files, loaded into its system prompt at the start of a run."""

    tenancy = Tenancy(tenant="agent__tenant", owner="agent__owner")

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="memory_files",
                              db_index=False)
    # Narrower than the base: memory paths are held to the memory middleware's 255 characters.
    path = models.CharField(max_length=255, help_text='Absolute, e.g. "/memories/AGENTS.md".')

    class Meta:
        db_table = "memory_files"
        ordering = ["agent", "path"]
        constraints = [
            models.UniqueConstraint(fields=["agent", "path"], name="memory_file_path_unique"),
            models.CheckConstraint(condition=Q(path__startswith="/"), name="memory_path_absolute"),
        ]


class Skill(models.Model):
    """A tenant-wide skill: a name and description the agent sees, instructions it loads."""

    tenancy = Tenancy(tenant="tenant", owner=None)

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="skills",
                               db_index=False)
    owner = models.ForeignKey(Member, on_delete=models.CASCADE, related_name="skills")
    name = models.CharField(max_length=64)
    description = models.CharField(max_length=1024)
    instructions = models.TextField(blank=True, default="")
    allowed_tools = models.JSONField(
        null=True, blank=True, help_text="Tools a loaded skill may add (never past the allowlist)."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "skills"
        ordering = ["tenant", "name"]
        constraints = [
            models.UniqueConstraint(fields=["tenant", "name"], name="skill_name_unique"),
            models.CheckConstraint(condition=~Q(name=""), name="skill_name_not_empty"),
        ]

    def __str__(self) -> str:
        return self.name
