"""accounts.admin: a tenant's usage read plainly, the audit log's details readable, keys issued
and revoked through the services (audited) and never deleted on their own."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from decimal import Decimal

from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from accounts.audit import audit_record
from accounts.models import ApiKey, AuditAction, AuditEntry, QuotaHold, TenantPrice, UsageRecord
from accounts.prices import Price, stored


def record_usage(tenant, tokens: int) -> None:
    UsageRecord.objects.create(tenant=tenant, purpose="run", provider="scripted", model="demo",
                               input_tokens=tokens, dedupe_key=f"test:{tokens}")


def test_a_tenant_without_a_quota_reads_its_usage_plainly(staff_client, tenant):
    record_usage(tenant, 206_739)
    page = staff_client.get(reverse("admin:accounts_tenant_change", args=[tenant.pk]))
    text = page.content.decode()
    assert "206,739 tokens this month · no quota" in text
    assert "206,739 unlimited" not in text
    listed = staff_client.get(reverse("admin:accounts_tenant_changelist")).content.decode()
    assert "206,739 tokens this month · no quota" in listed


def test_a_tenant_with_a_daily_quota_reads_its_share_and_reset(staff_client, tenant):
    tenant.token_quota, tenant.quota_period = 1_000_000, "day"
    tenant.save()
    record_usage(tenant, 250_000)
    text = staff_client.get(reverse("admin:accounts_tenant_change",
                                    args=[tenant.pk])).content.decode()
    assert "250,000 of 1,000,000 tokens today (25%) · resets " in text


def test_an_audit_entrys_detail_is_indented_and_escaped(staff_client, tenant):
    with transaction.atomic():
        entry = audit_record(actor=None, tenant=tenant, action=AuditAction.AGENT_UPDATE,
                             obj_type="agent", obj_id="a1",
                             detail={"changed": ["name", "description"], "name": "<b>x</b>"})
    page = staff_client.get(reverse("admin:accounts_auditentry_change", args=[entry.pk]))
    text = page.content.decode()
    assert '<pre class="audit-detail">{\n  &quot;changed&quot;: [\n    &quot;name&quot;' in text
    assert "&lt;b&gt;x&lt;/b&gt;" in text and "<b>x</b>" not in text
    listed = staff_client.get(reverse("admin:accounts_auditentry_changelist")).content.decode()
    assert "changed: name, description" in listed


def test_a_key_issued_and_revoked_here_is_audited_as_the_staff_users_member(
        staff_client, alice, staff_member):
    add = staff_client.post(reverse("admin:accounts_apikey_add"),
                            {"name": "ci", "member": str(alice.member.pk)})
    assert add.status_code == 302
    key = ApiKey.objects.get(name="ci")
    assert AuditEntry.objects.get(action=AuditAction.API_KEY_CREATE,
                                  object_id=str(key.pk)).actor == staff_member
    revoke = staff_client.post(reverse("admin:accounts_apikey_changelist"),
                               {"action": "revoke", "_selected_action": [str(key.pk)]})
    assert revoke.status_code == 302
    assert AuditEntry.objects.get(action=AuditAction.API_KEY_REVOKE).actor == staff_member


def test_a_key_is_revoked_not_deleted(staff_client, alice):
    key = ApiKey.objects.get(member=alice.member)
    delete = reverse("admin:accounts_apikey_delete", args=[key.pk])
    assert staff_client.post(delete, {"post": "yes"}).status_code == 403
    assert ApiKey.objects.filter(pk=key.pk).exists()


def test_a_stale_quota_hold_is_freed_here(staff_client, tenant):
    hold = QuotaHold.objects.create(tenant=tenant, tokens=1000, expires_at=timezone.now())
    delete = reverse("admin:accounts_quotahold_delete", args=[hold.pk])
    assert staff_client.post(delete, {"post": "yes"}).status_code == 302
    assert not QuotaHold.objects.exists()


def test_a_tenant_page_shows_the_months_cost_per_currency(staff_client, tenant):
    from_table = Price(currency="USD", source="genai-prices 0.2.5", input=Decimal("3"),
                       cache_write=Decimal("3.75"), cache_read=Decimal("0.3"),
                       output=Decimal("15"))
    own = replace(from_table, currency="EUR", source="tenant", input=Decimal("1"))
    for n, price in enumerate([from_table, from_table, own]):
        UsageRecord.objects.create(tenant=tenant, purpose="run", provider="anthropic",
                                   model="claude-sonnet-4-5", input_tokens=1_000_000,
                                   output_tokens=100_000, dedupe_key=f"priced:{n}",
                                   **stored(price))
    record_usage(tenant, 10)  # scripted: unpriced
    # Last month's calls are not this month's.
    old = UsageRecord.objects.create(tenant=tenant, purpose="run", provider="anthropic",
                                     model="claude-sonnet-4-5", input_tokens=10**9,
                                     dedupe_key="old", **stored(from_table))
    UsageRecord.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=40))
    text = staff_client.get(reverse("admin:accounts_tenant_change",
                                    args=[tenant.pk])).content.decode()
    assert "2.5 EUR + 9 USD · 1 calls unpriced" in text
    listed = staff_client.get(reverse("admin:accounts_usagerecord_changelist")).content.decode()
    assert "4.5 USD" in listed and "2.5 EUR" in listed and "unpriced" in listed


def test_a_price_set_and_removed_here_is_audited_as_the_staff_users_member(
        staff_client, tenant, staff_member):
    form = {"tenant": str(tenant.pk), "provider": "scripted", "model": "demo",
            "currency": "EUR", "input": "1", "cache_write": "1.25", "cache_read": "0.1",
            "output": "5"}
    assert staff_client.post(reverse("admin:accounts_tenantprice_add"), form).status_code == 302
    price = TenantPrice.objects.get()
    assert (price.currency, price.output) == ("EUR", Decimal("5"))
    change = reverse("admin:accounts_tenantprice_change", args=[price.pk])
    assert staff_client.post(change, form | {"output": "6"}).status_code == 302
    assert TenantPrice.objects.get().output == Decimal("6")
    delete = reverse("admin:accounts_tenantprice_delete", args=[price.pk])
    assert staff_client.post(delete, {"post": "yes"}).status_code == 302
    assert not TenantPrice.objects.exists()
    rows = AuditEntry.objects.filter(object_type="price").order_by("created_at")
    assert [(r.action, r.actor) for r in rows] == [
        (AuditAction.PRICE_SET, staff_member), (AuditAction.PRICE_SET, staff_member),
        (AuditAction.PRICE_DELETE, staff_member)]
    assert rows[1].detail["changed"] == ["output"]
