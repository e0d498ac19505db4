"""The Django admin: every model is registered, its pages render for a staff user, and it writes
nothing but through the services (the operator's tenants and members aside)."""

from __future__ import annotations

import re

from django.apps import apps
from django.contrib import admin
from django.contrib.admin import ModelAdmin
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.db.models import CompositePrimaryKey
from django.urls import reverse

from accounts.models import Member, Tenant
from agents.models import AgentVersion
from evals.models import EvalCase, EvalCaseResult
from runs.models import Run, RunEvent, RunStatus
from schedules.models import Fire
from tests.support.api import post_message

HANGO_APPS = ("accounts", "integrations", "agents", "runs", "context", "schedules", "webhooks",
              "evals")
# Written by the operator, here and from the command line; no API route writes them.
OPERATORS_OWN = {Tenant, Member}
# Models with a composite primary key, which the admin cannot register: their rows are on their
# parent's pages instead.
ON_A_PARENTS_PAGE = {RunEvent}
# Models listed only on their parent's page: as an inline, or (an agent's versions, which no
# admin may change or delete: agents/version_admin.py) as a read-only table.
INLINE_ONLY = {Fire, AgentVersion, EvalCase, EvalCaseResult}


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
    suite = alice.client.post("/v1/eval-suites", {"name": "smoke"}, format="json").json()
    alice.client.post(f"/v1/eval-suites/{suite['id']}/cases",
                      {"name": "hi", "turns": ["hi"], "graders": [{"type": "contains",
                                                                   "value": "hi"}]},
                      format="json")
    started = alice.client.post("/v1/eval-runs", {"suite": suite["id"],
                                                  "agent": session["agent"]}, format="json")
    assert started.status_code == 201, started.content
    sessions = reverse("admin:runs_session_changelist")
    assert "eval smoke: hi" not in staff_client.get(sessions).content.decode()
    assert "eval smoke: hi" in staff_client.get(sessions + "?kind=eval").content.decode()
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
    # The waiting message's run started.
    assert Run.objects.get(status="queued", session__kind="chat").pk != run.pk


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


def test_a_view_only_user_is_neither_offered_nor_allowed_an_action(client, alice, make_session,
                                                                   hango_settings):
    """Cancel, resume, pause and revoke write where their admins' forms do not: they need the
    model's change permission, not just a look at the list."""
    hango_settings(run_inline=False, broker_url="")  # the run stays queued
    session = make_session(alice)
    viewer = get_user_model().objects.create_user("viewer", "viewer@example.com", "pw",
                                                  is_staff=True)
    viewer.user_permissions.set(Permission.objects.filter(
        codename__in=["view_run", "view_schedule", "view_apikey"]))
    client.force_login(viewer)
    for changelist, action in (("admin:runs_run_changelist", "cancel_runs"),
                               ("admin:schedules_schedule_changelist", "pause"),
                               ("admin:accounts_apikey_changelist", "revoke")):
        listed = client.get(reverse(changelist))
        assert listed.status_code == 200 and f'value="{action}"'.encode() not in listed.content
    run = Run.objects.get(pk=post_message(alice, session["id"], "hi").json()["run"]["id"])
    client.post(reverse("admin:runs_run_changelist"),
                {"action": "cancel_runs", "_selected_action": [str(run.pk)]})
    run.refresh_from_db()
    assert run.status != RunStatus.CANCELLED and not run.cancel_requested


def test_a_member_who_owns_agents_is_not_deleted_here(staff_client, alice, make_agent):
    """A member's agents carry other members' sessions and are deleted through their service
    (audited, skills detached): the admin does not cascade past it."""
    make_agent(alice)
    delete = reverse("admin:accounts_member_delete", args=[alice.member.pk])
    page = staff_client.get(delete)
    assert page.status_code == 200 and b"permission to delete" in page.content
    assert staff_client.post(delete, {"post": "yes"}).status_code == 403
    assert Member.objects.filter(pk=alice.member.pk).exists()
