"""``hango_bootstrap`` and ``hango_create_key``: the new key alone on stdout's last line, and it
works, with the member's role; the tenant's id on stderr. ``hango_staff``: an existing user into
the admin."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from rest_framework.test import APIClient

from accounts.models import ApiKey, Member, Role, Tenant


def printed(command: str, **options) -> tuple[str, str]:
    """Run ``command``; its stdout and stderr."""
    out, err = StringIO(), StringIO()
    call_command(command, stdout=out, stderr=err, **options)
    return out.getvalue(), err.getvalue()


def run(command: str, **options) -> str:
    """Run ``command``; returns the key printed on the last line of stdout."""
    out, err = printed(command, **options)
    key = out.strip().splitlines()[-1]
    assert key not in err  # the key goes to stdout only
    return key


def client_for(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client


def member_of(key: str) -> Member:
    return ApiKey.objects.select_related("member__user", "member__tenant").get(
        prefix=key.split("_")[1]
    ).member


def bootstrap(tenant: str = "t1", email: str = "a@b.test") -> str:
    return run("hango_bootstrap", tenant=tenant, email=email)


def create_key(role: str, tenant: str = "t1", email: str = "m@b.test") -> str:
    return run("hango_create_key", tenant=tenant, email=email, role=role)


def test_bootstrap_prints_a_working_owner_key(db):
    key = bootstrap()
    assert client_for(key).get("/v1/agents").status_code == 200
    member = member_of(key)
    assert member.role == Role.OWNER
    assert (member.tenant.name, member.user.email) == ("t1", "a@b.test")


@pytest.mark.parametrize("command, options", [
    ("hango_bootstrap", {}), ("hango_create_key", {"email": "m@b.test", "role": Role.MEMBER})])
def test_the_tenant_s_id_is_printed_and_stdout_stays_the_key_alone(db, command, options):
    bootstrap()
    out, err = printed(command, **{"tenant": "t1", "email": "a@b.test", **options})
    [key] = out.split()  # what ``KEY=$(manage.py …)`` keeps
    tenant = Tenant.objects.get(name="t1")
    assert f"Tenant id: {tenant.pk} " in err and member_of(key).tenant_id == tenant.pk


def test_bootstrap_key_sees_the_whole_tenant(db):
    owner_key = bootstrap()
    member_key = create_key(Role.MEMBER)
    agent = client_for(member_key).post(
        "/v1/agents", {"name": "n", "model": "scripted:demo"}, format="json"
    ).json()
    listed = client_for(owner_key).get("/v1/agents").json()["results"]
    assert [a["id"] for a in listed] == [agent["id"]]


def test_bootstrap_again_issues_another_valid_key(db):
    first, second = bootstrap(), bootstrap()
    assert first != second
    for key in (first, second):
        assert client_for(key).get("/v1/agents").status_code == 200
    assert Tenant.objects.filter(name="t1").count() == 1
    assert member_of(first).pk == member_of(second).pk


def test_bootstrap_refuses_an_existing_member_who_is_not_owner(db):
    bootstrap()
    create_key(Role.MEMBER, email="m@b.test")
    with pytest.raises(CommandError):
        bootstrap(email="m@b.test")
    assert Member.objects.get(user__email="m@b.test").role == Role.MEMBER


@pytest.mark.parametrize("tenant, email", [("  ", "a@b.test"), ("t1", "not-an-email")])
def test_bootstrap_rejects_bad_input(db, tenant, email):
    with pytest.raises(CommandError):
        bootstrap(tenant=tenant, email=email)
    assert not ApiKey.objects.filter(member__user__email=email).exists()


@pytest.mark.parametrize("role", Role.values)
def test_create_key_creates_the_member_with_the_role(db, role):
    bootstrap()
    key = create_key(role)
    assert client_for(key).get("/v1/agents").status_code == 200
    member = member_of(key)
    assert (member.role, member.tenant.name, member.user.email) == (role, "t1", "m@b.test")


def test_create_key_for_an_existing_member_with_the_same_role(db):
    bootstrap()
    first, second = create_key(Role.MEMBER), create_key(Role.MEMBER)
    assert first != second
    assert member_of(first).pk == member_of(second).pk
    assert all(client_for(k).get("/v1/agents").status_code == 200 for k in (first, second))


def test_create_key_unknown_tenant(db):
    with pytest.raises(CommandError, match="nope"):
        create_key(Role.MEMBER, tenant="nope")
    assert not Tenant.objects.filter(name="nope").exists()
    assert not Member.objects.filter(user__email="m@b.test").exists()


@pytest.mark.parametrize("existing, asked", [(Role.MEMBER, Role.ADMIN), (Role.ADMIN, Role.OWNER),
                                             (Role.OWNER, Role.MEMBER)])
def test_create_key_refuses_a_role_change(db, existing, asked):
    bootstrap()
    create_key(existing)
    keys = ApiKey.objects.filter(member__user__email="m@b.test")
    keys_before = keys.count()
    with pytest.raises(CommandError):
        create_key(asked)
    assert keys.count() == keys_before
    assert Member.objects.get(user__email="m@b.test").role == existing


@pytest.mark.parametrize("role", ["superuser", "OWNER", ""])
def test_create_key_rejects_a_bad_role(db, role):
    bootstrap()
    with pytest.raises(CommandError):
        create_key(role)
    assert not Member.objects.filter(user__email="m@b.test").exists()


def test_a_bootstrapped_owner_is_made_staff_and_can_log_in_to_the_admin(db, client):
    bootstrap(email="Owner@B.test")
    # Django's own command refuses the user bootstrap made; hango_staff takes them as they are.
    with pytest.raises(CommandError, match="already taken"):
        call_command("createsuperuser", username="owner@b.test", email="owner@b.test",
                     interactive=False, stdout=StringIO(), stderr=StringIO())
    out, _ = printed("hango_staff", email="OWNER@b.test")
    assert out.splitlines() == ["owner@b.test is now staff and superuser.",
                                "They have no password yet: python manage.py changepassword "
                                "owner@b.test"]
    user = get_user_model().objects.get(username="owner@b.test")
    assert user.is_staff and user.is_superuser
    user.set_password("a long enough pass phrase")
    user.save()
    assert client.login(username="owner@b.test", password="a long enough pass phrase")
    assert client.get("/admin/").status_code == 200
    again, _ = printed("hango_staff", email="owner@b.test")
    assert again == "owner@b.test is already staff and superuser.\n"  # a password: no hint


def test_hango_staff_refuses_an_unknown_user(db):
    with pytest.raises(CommandError, match="No user 'nobody@b.test'.*hango_bootstrap"):
        call_command("hango_staff", email="nobody@b.test")
    assert not get_user_model().objects.filter(is_staff=True).exists()
