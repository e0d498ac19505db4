"""accounts.admin: a tenant's usage read plainly, the audit log's details readable."""

from __future__ import annotations

from django.db import transaction
from django.urls import reverse

from accounts.audit import audit_record
from accounts.models import AuditAction, UsageRecord


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
