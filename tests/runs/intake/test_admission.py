"""Run admission's refusals say what decides them: the tokens left, what the active runs
reserve, what one more run needs."""

from __future__ import annotations

import pytest
from django.db import transaction

from accounts.models import Tenant
from hango_project.errors import QuotaExceeded
from runs.intake.admission import quota_admit


def refusal(tenant: Tenant) -> str:
    with pytest.raises(QuotaExceeded) as refused, transaction.atomic():
        quota_admit(tenant.pk)
    return refused.value.message


def test_a_quota_smaller_than_a_reservation_is_not_called_nearly_spent(tenant, hango_settings):
    hango_settings(quota_run_reservation_tokens=1000)
    Tenant.objects.filter(pk=tenant.pk).update(token_quota=500)
    message = refusal(tenant)
    assert "nearly spent" not in message
    assert "500 tokens left" in message and "reserves 1000 tokens" in message, message
    assert "active" not in message  # there are none to wait for


def test_active_runs_reservations_are_named(tenant, queued_run, hango_settings):
    hango_settings(quota_run_reservation_tokens=1000)
    Tenant.objects.filter(pk=tenant.pk).update(token_quota=1500)
    message = refusal(tenant)
    assert "1500 tokens left" in message, message
    assert "its 1 active run reserves 1000 of them" in message, message
    assert "try again when it finishes" in message, message
