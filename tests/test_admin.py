"""The Django admin: every model is registered, its pages render for a staff user, and it writes
nothing but through the services (the operator's tenants and members aside)."""

from __future__ import annotations

import re

from django.apps import apps
from django.contrib import admin
from django.contrib.admin import ModelAdmin
from django.db.models import CompositePrimaryKey
from django.urls import reverse

from accounts.models import Member, Tenant
from runs.models import Run, RunEvent
from schedules.models import Fire

HANGO_APPS = ("accounts", "agents", "runs", "context", "schedules", "webhooks")
# Written by the operator, here and from the command line; no API route writes them.
OPERATORS_OWN = {Tenant, Member}
# Models with a composite primary key, which the admin cannot register: their rows are on their
# parent's pages instead.
ON_A_PARENTS_PAGE = {RunEvent}
# Models listed only on their parent's page, as an inline.
INLINE_ONLY = {Fire}


def admin_models() -> list:
    return [m for m in apps.get_models() if m._meta.app_label in HANGO_APPS
            and m not in ON_A_PARENTS_PAGE | INLINE_ONLY]


def test_every_hango_model_is_in_the_admin():
    models = admin_models()
    assert models
    for model in models:
        assert admin.site.is_registered(model), model
    assert all(isinstance(m._meta.pk, CompositePrimaryKey) for m in ON_A_PARENTS_PAGE)


def test_admin_pages_render(staff_client, alice, make_session, hango_settings):
    hango_settings(run_inline=False, broker_url="")
    session = make_session(alice)
    alice.client.post(f"/v1/sessions/{session['id']}/messages", {"content": "hi"}, format="json")
    alice.client.post(f"/v1/sessions/{session['id']}/messages",
                      {"content": "and then", "multitask": "enqueue"}, format="json")  # it waits
    run = Run.objects.get(status="queued")
    for model in admin_models():
        opts = model._meta
        prefix = f"admin:{opts.app_label}_{opts.model_name}"
        assert staff_client.get(reverse(f"{prefix}_changelist")).status_code == 200, opts.label
        obj = model.objects.first()
        if obj is not None:
            change = reverse(f"{prefix}_change", args=[obj.pk])
            assert staff_client.get(change).status_code == 200, opts.label
    events = staff_client.get(reverse("admin:runs_run_events", args=[run.pk]))
    assert events.status_code == 200 and b"run.status" in events.content
    page = staff_client.get(reverse("admin:accounts_apikey_changelist")).content.decode()
    assert alice.key not in page and alice.key.split("_")[1] in page  # by prefix only

    response = staff_client.post(reverse("admin:runs_run_changelist"),
                                 {"action": "cancel_runs", "_selected_action": [str(run.pk)]})
    assert response.status_code == 302
    run.refresh_from_db()
    assert run.status == "cancelled"
    assert Run.objects.get(status="queued").pk != run.pk  # the waiting message's run started


def test_the_admin_index_names_every_model_in_english(staff_client):
    page = staff_client.get(reverse("admin:index")).content.decode()
    assert "Audit entries" in page and "API keys" in page
    assert "entrys" not in page and "Api keys" not in page
    for model in admin.site._registry:
        plural = str(model._meta.verbose_name_plural)
        assert not re.search(r"[^aeiou]ys$", plural), model  # "entrys", not "keys"


def overrides(model_admin: object, *names: str) -> bool:
    return all(getattr(type(model_admin), n) is not getattr(ModelAdmin, n) for n in names)


def test_every_write_the_admin_allows_goes_through_a_service(rf, admin_user):
    """An admin that may add or change a row saves it its own way (through a service), one that
    may delete deletes its own way, one whose inlines write saves them its own way: Django's
    defaults would write the row as the form has it, with no service and no audit row."""
    request = rf.get("/admin/")
    request.user = admin_user
    for model in admin_models():
        if model in OPERATORS_OWN:
            continue
        model_admin = admin.site.get_model_admin(model)
        if model_admin.has_add_permission(request) or model_admin.has_change_permission(request):
            assert overrides(model_admin, "save_model"), model
        if model_admin.has_delete_permission(request):
            assert overrides(model_admin, "delete_model", "delete_queryset"), model
        for inline in model_admin.get_inline_instances(request):
            if (inline.has_add_permission(request, None) or inline.has_change_permission(request)
                    or inline.has_delete_permission(request)):
                assert overrides(model_admin, "save_formset"), (model, inline)
