"""``GET /v1/me``: every caller learns their own tenant (its id, which a broker trigger names),
member, role and key — never another's — and a request without a key is a 401 as elsewhere."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from accounts.models import Member, Role
from accounts.services import api_key_revoke
from tests.support.api import error_of
from tests.support.openapi import operations


@pytest.mark.django_db  # callers fetched by name: the database, unseen by collection
@pytest.mark.parametrize("who", ["owner", "admin", "alice", "outsider"])
def test_every_member_learns_their_tenant_member_role_and_key(request, who):
    caller = request.getfixturevalue(who)
    member = caller.member
    answer = caller.client.get("/v1/me")
    assert answer.status_code == 200, answer.content
    assert answer.json() == {
        "tenant": {"id": str(member.tenant_id), "name": member.tenant.name},
        "member": {"id": str(member.pk), "email": member.user.email},
        "role": member.role,
        "key": {"prefix": caller.key.split("_")[1], "name": "test"},
    }


def test_no_key_a_bad_key_and_a_revoked_key_are_401(anon, alice):
    error_of(anon.get("/v1/me"), 401)
    anon.credentials(HTTP_AUTHORIZATION="Bearer hk_000000000000_not-a-key")
    error_of(anon.get("/v1/me"), 401)
    api_key_revoke(actor=alice.member, api_key=alice.member.api_keys.get())
    error_of(alice.client.get("/v1/me"), 401)


def test_it_is_read_only(alice):
    for method in ("post", "put", "patch", "delete"):
        error_of(getattr(alice.client, method)("/v1/me", {}, format="json"), 405)


def test_a_staff_login_session_is_its_member_of_the_named_tenant_with_no_key(tenant,
                                                                            other_tenant):
    user = get_user_model().objects.create_user("carol@acme.test", "carol@acme.test", "pw",
                                                is_staff=True)
    Member.objects.create(tenant=tenant, user=user, role=Role.MEMBER)
    there = Member.objects.create(tenant=other_tenant, user=user, role=Role.ADMIN)
    browser = Client()
    browser.force_login(user)
    answer = browser.get("/v1/me", headers={"X-Hango-Tenant": str(other_tenant.pk)}).json()
    assert answer["tenant"] == {"id": str(other_tenant.pk), "name": "globex"}
    assert (answer["member"]["id"], answer["role"], answer["key"]) == (str(there.pk), "admin",
                                                                       None)


def test_the_schema_documents_the_answer():
    (me,) = [op for op in operations() if op.path == "/v1/me"]
    assert me.method == "get" and me.operation_id == "me_retrieve"
    answer = me.response("200")
    assert set(answer["required"]) == {"tenant", "member", "role", "key"}
    assert set(answer["properties"]["tenant"]["required"]) == {"id", "name"}
    assert answer["properties"]["role"]["allOf"][0]["enum"] == ["owner", "admin", "member"]
    assert "401" in me.spec["responses"]
