"""Tenants and members (the operator's: no API route writes them), keys issued and revoked
through the services, and the usage, holds and audit log the application writes."""

import json
import uuid
from typing import Any

from django.contrib import admin, messages
from django.contrib.auth.models import AnonymousUser
from django.http import HttpRequest
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe
from django.utils.text import Truncator

from accounts.models import (
    ApiKey,
    AuditEntry,
    IdempotencyKey,
    Member,
    QuotaHold,
    QuotaPeriod,
    Tenant,
    TenantPrice,
    UsageRecord,
    UsageSource,
)
from accounts.prices import RATES, record_price
from accounts.services import api_key_issue, api_key_revoke
from accounts.tenant_prices import price_delete, price_set
from accounts.usage import cost_line, money, period_bounds, quota_release, tenant_spend
from hango_project.admin import ActionsAdmin, AppWrittenAdmin, OwnerAdmin, ServiceWrittenAdmin

PERIOD_WORDS = {QuotaPeriod.DAY: "today", QuotaPeriod.MONTH: "this month"}


def acting_member(request: HttpRequest, tenant_id: uuid.UUID) -> Member | None:
    """Whom the audit row of a write made here names: the staff user's member of the tenant
    (as the Context panel acts), or nobody when they are none — as for a write from the
    command line; the admin's own history names the user either way."""
    assert not isinstance(request.user, AnonymousUser)  # admin_view lets only staff in
    return Member.objects.filter(user=request.user, tenant_id=tenant_id).first()



class MemberInline(admin.TabularInline):
    model = Member
    extra = 0
    fields = ["user", "role", "created_at"]
    readonly_fields = ["created_at"]
    autocomplete_fields = ["user"]


@admin.register(Tenant)
class TenantAdmin(OwnerAdmin, admin.ModelAdmin):
    list_display = ["name", "trace_llm_content", "token_quota", "quota_period", "quota_used",
                    "month_cost", "created_at"]
    search_fields = ["name"]
    readonly_fields = ["id", "quota_used", "month_cost", "created_at"]
    inlines = [MemberInline]

    @admin.display(description="cost this month")
    def month_cost(self, tenant: Tenant) -> str:
        """What the calendar (UTC) month's calls cost, per currency, and how many had no
        price (their cost is unknown, not zero)."""
        start, _ = period_bounds(QuotaPeriod.MONTH)
        return cost_line(UsageRecord.objects.filter(tenant=tenant, created_at__gte=start))

    @admin.display(description="usage")
    def quota_used(self, tenant: Tenant) -> str:
        """The period's spend, its share of the quota and when it resets (periods are UTC)."""
        start, end = period_bounds(tenant.quota_period)
        used, quota = tenant_spend(tenant.pk, start), tenant.token_quota
        period = PERIOD_WORDS[QuotaPeriod(tenant.quota_period)]
        if quota is None:
            return f"{used:,} tokens {period} · no quota"
        share = f" ({used * 100 // quota}%)" if quota else ""
        return f"{used:,} of {quota:,} tokens {period}{share} · resets {end:%Y-%m-%d} UTC"


@admin.register(Member)
class MemberAdmin(admin.ModelAdmin):
    list_display = ["user", "tenant", "role", "created_at"]
    list_filter = ["role", "tenant"]
    search_fields = ["user__username", "user__email", "tenant__name"]
    readonly_fields = ["id", "created_at"]
    autocomplete_fields = ["user", "tenant"]


@admin.register(ApiKey)
class ApiKeyAdmin(ActionsAdmin, admin.ModelAdmin):
    """Keys are shown by prefix only; the digest never leaves the database. Issued and revoked
    through the services (audited as the staff user's member of the key's tenant); a key is
    revoked, never deleted on its own (its audit rows name it), and goes with its member."""

    deleted_with_owner = True

    list_display = ["prefix", "name", "member", "created_at", "last_used_at", "revoked_at"]
    list_filter = ["member__tenant"]
    search_fields = ["prefix", "name", "member__user__username"]
    fields = ["name", "member", "prefix", "created_at", "last_used_at", "revoked_at"]
    readonly_fields = ["prefix", "created_at", "last_used_at", "revoked_at"]
    autocomplete_fields = ["member"]
    actions = ["revoke"]

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Once issued, a key's owner and name are history; only revocation changes it.
        return obj is None and super().has_change_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def save_model(self, request, obj, form, change):
        issued = api_key_issue(member=obj.member, name=obj.name,
                               actor=acting_member(request, obj.member.tenant_id))
        obj.pk, obj.prefix = issued.api_key.pk, issued.api_key.prefix
        obj._state.adding = False
        self.message_user(
            request,
            f"New key (shown once, copy it now): {issued.plaintext}",
            level=messages.WARNING,
        )

    @admin.action(description="Revoke selected keys", permissions=["act"])
    def revoke(self, request, queryset):
        for api_key in queryset.filter(revoked_at__isnull=True).select_related("member"):
            api_key_revoke(api_key=api_key,
                           actor=acting_member(request, api_key.member.tenant_id))
        self.message_user(request, "Revoked.")


@admin.register(UsageRecord)
class UsageRecordAdmin(AppWrittenAdmin, admin.ModelAdmin):
    """Read-only: usage is written by the run worker alone. A ledger: a tenant that has
    spent is not deleted here."""

    deleted_with_owner = False

    # Six columns that fit beside the admin's menu and the filters at 1,280 px: twelve (each
    # counter its own, the run by its full name) put the cost out of view, a sideways scroll
    # away, at 1,440 px too. The counters and their source share a cell; the page has each.
    list_display = ["when", "tenant", "call", "tokens", "cost", "run_link"]
    list_filter = ["purpose", "tenant", "provider", "usage_source", "price_source"]
    date_hierarchy = "created_at"
    # The page's order: the token columns, inherited from TokenCounts, would otherwise lead.
    fields = ["tenant", "session", "run", "agent", "purpose", "provider", "model", "input_tokens",
              "output_tokens", "cache_read_tokens", "cache_write_tokens", "usage_source", "cost",
              "price_currency", "price_input", "price_cache_write", "price_cache_read",
              "price_output", "price_source", "unpriced_reason", "dedupe_key"]
    readonly_fields = ["cost"]

    @admin.display(description="when", ordering="created_at")
    def when(self, row: UsageRecord) -> SafeString:
        """Date over time: a date field's column does not wrap, and took a sixth of the row."""
        at = timezone.localtime(row.created_at)
        return format_html('<span class="nowrap">{}</span><br>{}', at.strftime("%Y-%m-%d"),
                           at.strftime("%H:%M:%S"))

    @admin.display(description="call", ordering="model")
    def call(self, row: UsageRecord) -> SafeString:
        """What the call was for, over the model it went to."""
        return format_html("{}<br>{}:{}", row.get_purpose_display(), row.provider, row.model)

    @admin.display(description="tokens", ordering="input_tokens")
    def tokens(self, row: UsageRecord) -> SafeString:
        """In, out, what the prompt cache read and wrote (when it did), and where the counts
        come from when not from the provider."""
        lines = [f"{row.input_tokens:,} in", f"{row.output_tokens:,} out"]
        lines += [f"{count:,} {name}" for count, name in [
            (row.cache_read_tokens, "cache read"), (row.cache_write_tokens, "cache write")]
            if count]
        if row.usage_source != UsageSource.PROVIDER:
            lines.append(f"({row.get_usage_source_display().lower()})")
        # One counter a line, never broken inside.
        return format_html_join(mark_safe("<br>"), "{}",
                                ((line.replace(" ", "\N{NO-BREAK SPACE}"),) for line in lines))

    @admin.display(description="run", ordering="run")
    def run_link(self, row: UsageRecord) -> SafeString | str:
        """The run's id, short, linking to its page (without reading the run)."""
        if row.run_id is None:
            return "-"
        return format_html('<a href="{}" title="{}">{}</a>',
                           reverse("admin:runs_run_change", args=[row.run_id]), row.run_id,
                           str(row.run_id)[:8])

    @admin.display(description="cost")
    def cost(self, row: UsageRecord) -> str:
        """The call's cost at the price it was recorded with; unpriced calls say so."""
        price = record_price(row)
        if price is None:
            return "unpriced"
        cost = price.cost(row)
        return f"{money(cost.total)} {cost.currency}"


@admin.register(TenantPrice)
class TenantPriceAdmin(ServiceWrittenAdmin, admin.ModelAdmin):
    """A tenant's negotiated prices, set and removed through the service (audited as the staff
    user's member of the tenant). A price names its model for good: another model is another
    price."""

    list_display = ["tenant", "provider", "model", "currency", "input", "cache_write",
                    "cache_read", "output", "updated_at"]
    list_filter = ["tenant", "provider"]
    search_fields = ["model"]
    fields = ["tenant", "provider", "model", "currency", "input", "cache_write", "cache_read",
              "output"]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return ["tenant", "provider", "model"] if obj is not None else []

    def save_model(self, request, obj, form, change):
        saved, _ = price_set(
            tenant_id=obj.tenant_id, model=f"{obj.provider}:{obj.model}",
            currency=obj.currency, rates={name: getattr(obj, name) for name in RATES},
            actor=acting_member(request, obj.tenant_id))
        obj.pk = saved.pk
        obj._state.adding = False

    def delete_model(self, request, obj):
        price_delete(price=obj, actor=acting_member(request, obj.tenant_id))

    def delete_queryset(self, request, queryset):
        for price in queryset:
            price_delete(price=price, actor=acting_member(request, price.tenant_id))


@admin.register(QuotaHold)
class QuotaHoldAdmin(AppWrittenAdmin, admin.ModelAdmin):
    """Read-only: a hold lives from before a model call is sent until its usage is recorded.
    One that outlived its worker stops counting at ``expires_at``; deleting it frees it now."""

    may_delete = True
    list_display = ["created_at", "tenant", "run", "tokens", "expires_at"]
    list_filter = ["tenant"]
    fields = ["tenant", "run", "tokens", "expires_at", "created_at"]

    def delete_model(self, request: HttpRequest, obj: QuotaHold) -> None:
        quota_release(holds=[obj.pk])

    def delete_queryset(self, request: HttpRequest, queryset: Any) -> None:
        quota_release(holds=list(queryset.values_list("pk", flat=True)))


def _shown(value: Any) -> str:
    """A detail's value in a line: text as it is, a list of plain values joined by commas."""
    if isinstance(value, list) and not any(isinstance(v, dict | list) for v in value):
        return ", ".join(str(v) for v in value)
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


@admin.register(AuditEntry)
class AuditEntryAdmin(AppWrittenAdmin, admin.ModelAdmin):
    """Read-only: the audit log is append-only (a tenant with one is not deleted here)."""

    deleted_with_owner = False
    list_display = ["created_at", "tenant", "actor", "action", "object_type", "object_id",
                    "detail_summary"]
    list_filter = ["action", "tenant"]
    search_fields = ["object_id"]
    date_hierarchy = "created_at"
    fields = ["created_at", "tenant", "actor", "action", "object_type", "object_id",
              "readable_detail"]
    readonly_fields = ["readable_detail"]

    @admin.display(description="detail")
    def readable_detail(self, entry: AuditEntry) -> SafeString:
        text = json.dumps(entry.detail, indent=2, ensure_ascii=False, sort_keys=True)
        return format_html('<pre class="audit-detail">{}</pre>', text)

    @admin.display(description="detail")
    def detail_summary(self, entry: AuditEntry) -> str:
        """One line a list can hold: each key with its value."""
        line = "; ".join(f"{k}: {_shown(v)}" for k, v in (entry.detail or {}).items())
        return Truncator(line).chars(120)


@admin.register(IdempotencyKey)
class IdempotencyKeyAdmin(AppWrittenAdmin, admin.ModelAdmin):
    """Read-only: which requests a retry would be answered for, and by what status. Never the
    answer itself (sealed: it may hold a webhook's secret). The reconciler removes them."""

    list_display = ["created_at", "tenant", "member", "method", "path", "status"]
    list_filter = ["tenant"]
    search_fields = ["key"]
    fields = ["created_at", "tenant", "member", "key", "method", "path", "status"]
