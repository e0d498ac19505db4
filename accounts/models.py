"""Tenants, their members and the members' API keys."""

from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q

from accounts.tenancy import Tenancy


class QuotaPeriod(models.TextChoices):
    DAY = "day"
    MONTH = "month"


class Tenant(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=100, unique=True)
    trace_llm_content = models.BooleanField(
        default=False, help_text="Allow message content on telemetry spans for this tenant."
    )
    token_quota = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="Tokens (input + output + cache) per period; empty = "
        "unlimited.")
    quota_period = models.CharField(max_length=8, choices=QuotaPeriod.choices,
                                    default=QuotaPeriod.MONTH)
    rate_limit_per_minute = models.PositiveIntegerField(
        null=True, blank=True, help_text="Default requests per minute per API key; empty = the "
        "server default.")
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
    # The key's trigger-signing key (accounts/keys.py::trigger_key), sealed
    # (hango_project/sealing.py); empty for a key issued before broker triggers existed.
    trigger_key = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    rate_limit_per_minute = models.PositiveIntegerField(
        null=True, blank=True, help_text="Requests per minute; empty = the tenant's default.")

    class Meta:
        db_table = "api_keys"
        verbose_name = "API key"

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.name or 'unnamed'})"

    @property
    def revoked(self) -> bool:
        return self.revoked_at is not None


class UsagePurpose(models.TextChoices):
    RUN = "run"
    SUMMARIZE = "summarize"
    SUBAGENT = "subagent"
    CONTEXT_TRY = "context_try"
    # An eval's runs and its judge's calls (evals app).
    EVAL = "eval"


class UsageSource(models.TextChoices):
    """Where a usage row's counts come from (harness.messages.UsageSource)."""

    PROVIDER = "provider"  # the provider's answer
    COUNTED = "counted"  # none in the answer: hango counted the call with the family's tokenizer
    ESTIMATED = "estimated"  # none in the answer and no tokenizer for the family: the estimate


class TokenCounts(models.Model):
    """The four token counters of model calls, as the harness reports them: one call's (a usage
    row) or a run's running sums. They do not overlap, so their sum is what a call cost."""

    input_tokens = models.PositiveBigIntegerField(default=0)
    output_tokens = models.PositiveBigIntegerField(default=0)
    cache_read_tokens = models.PositiveBigIntegerField(default=0)
    cache_write_tokens = models.PositiveBigIntegerField(default=0)

    class Meta:
        abstract = True

    @property
    def total(self) -> int:
        """All four counters: what a token quota counts."""
        return (self.input_tokens + self.output_tokens + self.cache_read_tokens
                + self.cache_write_tokens)


def rate_field(**kwargs: Any) -> models.DecimalField:
    """A price per million tokens: exact decimals, never a float."""
    return models.DecimalField(max_digits=20, decimal_places=9, **kwargs)


class TenantPrice(models.Model):
    """A tenant's negotiated price for one model (``provider:model``, the exact name a usage row
    carries), per million tokens of each counter. It wins over the price table for the calls
    recorded while it exists; rows already recorded keep the price they were recorded with."""

    tenancy = Tenancy(tenant="tenant", owner=None)

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="prices")
    provider = models.CharField(max_length=32)
    model = models.CharField(max_length=200)
    currency = models.CharField(max_length=3, default="USD")
    input = rate_field()
    cache_write = rate_field()
    cache_read = rate_field()
    output = rate_field()
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "tenant_prices"
        constraints = [
            models.UniqueConstraint(fields=["tenant", "provider", "model"],
                                    name="tenant_price_unique_per_model"),
            models.CheckConstraint(
                condition=Q(input__gte=0, cache_write__gte=0, cache_read__gte=0, output__gte=0),
                name="tenant_price_not_negative"),
        ]

    def __str__(self) -> str:
        return f"{self.provider}:{self.model} ({self.currency})"


class UsageRecord(TokenCounts):
    """One model call's tokens. Written as the call ends, in a transaction of its own, whether or
    not the turn that made it lands (``runs/execution/call_ledger.py``): the provider charged for
    it.
    ``dedupe_key`` names the call (``<run>/<epoch>:<turn>:<call index>``, ``<run>:<turn>:<call
    index>`` before calls named their claim; ``try:<uuid>`` for a context try); it is not
    unique-indexed: the loop tells each call once, and the index cost every call an insert
    (``bench/README.md``)."""

    tenancy = Tenancy(tenant="tenant", owner="session__member")

    id = models.BigAutoField(primary_key=True)
    # A ledger: a row keeps the ids of the session, run and agent it was spent on after they are
    # deleted (a deleted tenant's rows go with it, through the ORM). Every turn writes a row, so
    # it has only the indexes a read needs, and no foreign-key constraints: each would make the
    # write lock its parent row — the tenant's and the agent's are shared by every run at once —
    # and the agent, session and run would each need an index for their deletes to check it.
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="usage_records",
                               db_index=False, db_constraint=False)
    session = models.ForeignKey("runs.Session", null=True, blank=True,
                                on_delete=models.DO_NOTHING, related_name="usage_records",
                                db_index=False, db_constraint=False)
    run = models.ForeignKey("runs.Run", null=True, blank=True, on_delete=models.DO_NOTHING,
                            related_name="usage_records", db_index=False, db_constraint=False)
    agent = models.ForeignKey("agents.Agent", null=True, blank=True,
                              on_delete=models.DO_NOTHING, related_name="usage_records",
                              db_index=False, db_constraint=False)
    purpose = models.CharField(max_length=16, choices=UsagePurpose.choices)
    provider = models.CharField(max_length=32)
    model = models.CharField(max_length=200)
    # A database default too: the rows of before the column, and a worker of the release before
    # it writing during a rolling deploy, are the provider's.
    usage_source = models.CharField(max_length=16, choices=UsageSource.choices,
                                    default=UsageSource.PROVIDER, db_default=UsageSource.PROVIDER)
    dedupe_key = models.CharField(max_length=120)
    # A run's own call: the fingerprint of the request it sent (harness.fingerprint: each part's
    # hash and tokens, and the cached prefix), whole or as the edit of the run's call before it.
    # A few dozen bytes a turn; null for other calls and for calls made before it was kept.
    request_print = models.BinaryField(null=True, blank=True, editable=False)
    # The price the call was charged at, per million tokens of each counter, as it stood when
    # the call was recorded (accounts/prices.py): a later table or tenant price does not
    # rewrite it. All four rates are null, and ``unpriced_reason`` says why, for a model with
    # no known price; its cost is null then, never a guess.
    price_currency = models.CharField(max_length=3, blank=True, default="")
    price_input = rate_field(null=True, blank=True)
    price_cache_write = rate_field(null=True, blank=True)
    price_cache_read = rate_field(null=True, blank=True)
    price_output = rate_field(null=True, blank=True)
    price_source = models.CharField(max_length=40, blank=True, default="",
                                    help_text="'tenant' or the price table's package version.")
    unpriced_reason = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "usage_records"
        # The quota's spend (tenant, since) and the usage route (the tenant's rows by time).
        indexes = [models.Index(fields=["tenant", "created_at"])]
        constraints = [
            models.CheckConstraint(condition=Q(purpose__in=UsagePurpose.values),
                                   name="usage_purpose_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.purpose} {self.model} {self.input_tokens}+{self.output_tokens}"


class QuotaHold(models.Model):
    """A model call's worst case, held against its tenant's quota from before the call is sent
    until the write that records the call's usage releases it (the turn's commit, the try's
    usage row): :func:`accounts.usage.quota_hold`. Only tenants with a quota have holds. A hold
    whose writer died is released by the run's next claim or end, and stops counting at
    ``expires_at`` in any case."""

    id = models.BigAutoField(primary_key=True)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="quota_holds")
    run = models.ForeignKey("runs.Run", null=True, blank=True, on_delete=models.CASCADE,
                            related_name="quota_holds")
    tokens = models.PositiveBigIntegerField()
    expires_at = models.DateTimeField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "quota_holds"

    def __str__(self) -> str:
        return f"{self.tokens} tokens held until {self.expires_at:%H:%M:%S}"


class AuditAction(models.TextChoices):
    """The closed set of audited writes."""

    AGENT_CREATE = "agent.create"
    AGENT_UPDATE = "agent.update"
    AGENT_DELETE = "agent.delete"
    MEMORY_WRITE = "memory.write"
    MEMORY_DELETE = "memory.delete"
    SKILL_CREATE = "skill.create"
    SKILL_UPDATE = "skill.update"
    SKILL_DELETE = "skill.delete"
    SESSION_CREATE = "session.create"
    SESSION_UPDATE = "session.update"
    RUN_CREATE = "run.create"
    RUN_CANCEL = "run.cancel"
    RUN_RESUME = "run.resume"
    RUN_APPROVE = "run.approve"
    RUN_TOOL_RESULTS = "run.tool_results"
    API_KEY_CREATE = "api_key.create"
    API_KEY_REVOKE = "api_key.revoke"
    CONTEXT_OVERRIDE = "context.override"
    CONTEXT_TRY = "context.try"
    TRIGGER_ACCEPT = "trigger.accept"
    TRIGGER_REJECT = "trigger.reject"  # a refused broker message: its reason, not a write
    WEBHOOK_CREATE = "webhook.create"
    WEBHOOK_UPDATE = "webhook.update"
    WEBHOOK_DELETE = "webhook.delete"
    WEBHOOK_ROTATE = "webhook.rotate"
    WEBHOOK_PING = "webhook.ping"
    SCHEDULE_CREATE = "schedule.create"
    SCHEDULE_UPDATE = "schedule.update"
    SCHEDULE_DELETE = "schedule.delete"
    SCHEDULE_RUN = "schedule.run"
    PRICE_SET = "price.set"
    PRICE_DELETE = "price.delete"
    MCP_SERVER_CREATE = "mcp_server.create"
    MCP_SERVER_UPDATE = "mcp_server.update"
    MCP_SERVER_DELETE = "mcp_server.delete"
    CREDENTIAL_SET = "credential.set"  # its name and scope only, never its value
    CREDENTIAL_DELETE = "credential.delete"
    EVAL_SUITE_CREATE = "eval_suite.create"
    EVAL_SUITE_UPDATE = "eval_suite.update"  # its fields, or a case added, changed or removed
    EVAL_SUITE_DELETE = "eval_suite.delete"
    EVAL_RUN_START = "eval_run.start"
    EVAL_RUN_CANCEL = "eval_run.cancel"


class AuditEntry(models.Model):
    """One successful write, or a refused trigger message. ``detail`` never holds secrets,
    message content or replacement text. Rows are only ever inserted: no API route changes or
    deletes one."""

    tenancy = Tenancy(tenant="tenant", owner="actor")

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="audit_entries")
    actor = models.ForeignKey(Member, null=True, blank=True, on_delete=models.SET_NULL,
                              related_name="audit_entries")
    action = models.CharField(max_length=32, choices=AuditAction.choices)
    object_type = models.CharField(max_length=32)
    object_id = models.CharField(max_length=64)
    detail = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "audit_log"
        verbose_name_plural = "audit entries"
        indexes = [models.Index(fields=["tenant", "-created_at"])]
        constraints = [
            models.CheckConstraint(condition=Q(action__in=AuditAction.values),
                                   name="audit_action_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.action} {self.object_type}:{self.object_id}"


class IdempotencyKey(models.Model):
    """The first answer to a write sent with an ``Idempotency-Key`` header
    (:mod:`accounts.idempotency`), stored in the transaction of the write it answers for: a
    retry with the same key finds it exactly when the write committed. Kept
    ``HANGO_IDEMPOTENCY_KEY_HOURS``; never shown by the API. The body is sealed: an answer may
    hold a secret shown once (a webhook's signing secret)."""

    id = models.BigAutoField(primary_key=True)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=255)
    # What made the request: its method, its path and query, and a hash of them with the body.
    method = models.CharField(max_length=8)
    path = models.TextField()
    fingerprint = models.CharField(max_length=64)
    # Who sent it: the key's (or the login session's) member.
    member = models.ForeignKey(Member, null=True, on_delete=models.SET_NULL, related_name="+")
    status = models.PositiveSmallIntegerField()
    content_type = models.CharField(max_length=100)
    sealed_body = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "idempotency_keys"
        constraints = [models.UniqueConstraint(fields=["tenant", "key"],
                                               name="idempotency_key_once_per_tenant")]
        indexes = [models.Index(fields=["created_at"])]

    def __str__(self) -> str:
        return f"{self.method} {self.path} ({self.key})"
