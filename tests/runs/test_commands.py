"""``hango_quickstart``: run again, it reuses the demo and keeps the admin's password; it names
the demo tenant's id and the models that run offline."""

from __future__ import annotations

import re
from io import StringIO

from django.contrib.auth import get_user_model
from django.core.management import call_command

from accounts.services import tenant_bootstrap
from harness.providers.scripted import named_script
from runs.management.commands.hango_quickstart import DEMO_EMAIL, DEMO_TENANT


def quickstart() -> str:
    out = StringIO()
    call_command("hango_quickstart", url="http://127.0.0.1:8000", stdout=out)
    return out.getvalue()


def admin_line(printed: str) -> str:
    [line] = [line for line in printed.splitlines() if line.strip().startswith("admin:")]
    return line


def test_the_first_quickstart_makes_the_admin_and_prints_its_password(inline_runs):
    printed = admin_line(quickstart())
    password = re.fullmatch(rf".*user {DEMO_EMAIL}  password (\S+)", printed)
    assert password is not None, printed
    admin = get_user_model().objects.get(username=DEMO_EMAIL)
    assert admin.is_staff and admin.is_superuser
    assert admin.check_password(password.group(1))


def test_running_it_again_keeps_the_admins_password_and_says_so(inline_runs):
    first = re.fullmatch(r".*  password (\S+)", admin_line(quickstart()))
    assert first is not None
    stored = get_user_model().objects.get(username=DEMO_EMAIL).password

    again = admin_line(quickstart())
    assert "password unchanged" in again and first.group(1) not in again
    assert "changepassword demo@example.com" in again
    admin = get_user_model().objects.get(username=DEMO_EMAIL)
    assert admin.password == stored and admin.check_password(first.group(1))


def test_a_demo_member_who_is_no_admin_yet_is_made_one_with_a_password(inline_runs):
    # The demo owner made by hango_bootstrap (no password): the quickstart makes the admin.
    tenant_bootstrap(tenant_name=DEMO_TENANT, email=DEMO_EMAIL)
    password = re.fullmatch(r".*  password (\S+)", admin_line(quickstart()))
    assert password is not None
    admin = get_user_model().objects.get(username=DEMO_EMAIL)
    assert admin.is_superuser and admin.check_password(password.group(1))


def test_it_prints_the_demo_tenant_s_id_a_broker_trigger_names(inline_runs):
    from accounts.models import Tenant

    printed = quickstart()
    assert f"tenant: {DEMO_TENANT} ({Tenant.objects.get(name=DEMO_TENANT).pk})" in printed


def test_it_names_the_offline_models_an_agent_may_use(inline_runs):
    printed = quickstart()
    for model in ("scripted:demo", "scripted:calls", "scripted:workload-<T>"):
        assert model in printed, model
    named_script("workload-3")  # each one named exists: no UnknownModel
    named_script("calls")
