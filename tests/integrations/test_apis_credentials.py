"""``/v1/credentials``: write-only secrets, the tenant's (owners and admins write them) and each
member's own; never answered back, logged or audited; sealed at rest."""

from __future__ import annotations

import logging

import pytest
from django.db import connection

from accounts.models import AuditAction, AuditEntry
from hango_project import sealing
from integrations.models import Credential
from tests.support.api import error_of

SECRET = "sk-live-9f8e7d6c5b4a"


def put(caller, name: str, value: str = SECRET, scope: str | None = None):
    query = f"?scope={scope}" if scope else ""
    return caller.client.put(f"/v1/credentials/{name}{query}", {"value": value}, format="json")


def test_an_admin_sets_the_tenants_credential_and_replaces_it(admin, alice):
    created = put(admin, "docs-token")
    assert created.status_code == 201, created.content
    body = created.json()
    assert set(body) == {"name", "scope", "problem", "created_at", "updated_at"}
    assert (body["name"], body["scope"], body["problem"]) == ("docs-token", "tenant", None)
    replaced = put(admin, "docs-token", "sk-live-new", scope="tenant")
    assert replaced.status_code == 200 and replaced.json()["created_at"] == body["created_at"]
    assert sealing.unseal(Credential.objects.get().value) == "sk-live-new"
    listed = alice.client.get("/v1/credentials").json()["results"]
    assert [(c["name"], c["scope"]) for c in listed] == [("docs-token", "tenant")]


def test_a_member_sets_their_own_not_the_tenants(alice, bob, admin):
    refused = put(alice, "docs-token")
    assert "?scope=member" in error_of(refused, 403, "permission_denied")["message"]
    assert not Credential.objects.exists()
    assert put(alice, "docs-token", scope="member").status_code == 201
    assert put(admin, "docs-token").status_code == 201  # the tenant's, beside alice's
    assert put(bob, "docs-token", "bobs", scope="member").status_code == 201
    mine = alice.client.get("/v1/credentials").json()["results"]
    assert sorted(c["scope"] for c in mine) == ["member", "tenant"]  # never bob's
    # An admin sees the tenant's and their own only: another member's is no one else's.
    assert [c["scope"] for c in admin.client.get("/v1/credentials").json()["results"]] == [
        "tenant"]
    assert Credential.objects.filter(name="docs-token").count() == 3


def test_removing_one(admin, alice):
    put(admin, "docs-token")
    put(alice, "docs-token", scope="member")
    error_of(alice.client.delete("/v1/credentials/docs-token"), 403, "permission_denied")
    assert alice.client.delete("/v1/credentials/docs-token?scope=member").status_code == 204
    error_of(alice.client.delete("/v1/credentials/docs-token?scope=member"), 404, "not_found")
    assert admin.client.delete("/v1/credentials/docs-token").status_code == 204
    error_of(admin.client.delete("/v1/credentials/nothing"), 404, "not_found")
    error_of(admin.client.delete("/v1/credentials/a%00b"), 404, "not_found")
    assert not Credential.objects.exists()


@pytest.mark.parametrize(("name", "body", "field", "words"), [
    ("docs-token", {"value": ""}, "value", "may not be blank"),
    ("docs-token", {"value": "x" * 8193}, "value", "no more than 8192"),
    ("docs-token", {"value": "line\nbreak"}, "value", "control characters"),
    ("docs-token", {"value": "tökén"}, "value", "non-ASCII"),
    ("docs-token", {"value": "tok "}, "value", "either end"),
    ("docs-token", {"value": "\ttok"}, "value", "either end"),
    ("docs-token", {"value": 5}, "value", "a string"),
    ("docs-token", {}, "value", "required"),
    ("docs-token", {"value": "x", "scope": "tenant"}, "scope", "Unknown field"),
    ("Docs_Token", {"value": "x"}, "name", "lowercase letters"),
    ("-token", {"value": "x"}, "name", "lowercase letters"),
    ("t" * 65, {"value": "x"}, "name", "at most 64"),
])
def test_what_cannot_be_a_credential_is_422(admin, name, body, field, words):
    response = admin.client.put(f"/v1/credentials/{name}", body, format="json")
    assert words in str(error_of(response, 422, "validation_error")["detail"][field])
    assert not Credential.objects.exists()


def test_a_bad_scope_is_400(admin):
    response = put(admin, "docs-token", scope="everyone")
    assert error_of(response, 400, "invalid_query")["detail"] == {"scope": "everyone"}


def test_the_value_is_never_answered_audited_or_logged(admin, alice, caplog):
    caplog.set_level(logging.DEBUG)
    answers = [put(admin, "docs-token"), put(admin, "docs-token", SECRET + "2"),
               put(alice, "mine", SECRET + "3", scope="member"),
               admin.client.get("/v1/credentials"), alice.client.get("/v1/credentials"),
               admin.client.delete("/v1/credentials/docs-token")]
    assert all(SECRET not in r.content.decode() for r in answers)
    assert SECRET not in caplog.text
    rows = AuditEntry.objects.filter(object_type="credential").order_by("created_at")
    assert [(r.action, r.detail) for r in rows] == [
        (AuditAction.CREDENTIAL_SET, {"name": "docs-token", "scope": "tenant", "created": True}),
        (AuditAction.CREDENTIAL_SET, {"name": "docs-token", "scope": "tenant", "created": False}),
        (AuditAction.CREDENTIAL_SET, {"name": "mine", "scope": "member", "created": True}),
        (AuditAction.CREDENTIAL_DELETE, {"name": "docs-token", "scope": "tenant"})]
    assert [r.actor_id for r in rows] == [admin.member.pk] * 2 + [alice.member.pk, admin.member.pk]


def test_the_column_holds_no_plaintext(admin):
    put(admin, "docs-token")
    with connection.cursor() as cursor:
        cursor.execute("SELECT value FROM credentials")
        [(stored,)] = cursor.fetchall()
    assert SECRET not in stored and stored.startswith("gAAAA")  # a Fernet token
    assert sealing.unseal(stored) == SECRET


def test_one_sealed_under_another_key_is_reported_unusable(admin, settings):
    put(admin, "docs-token")
    settings.SECRET_KEY = "another-deployment-key-entirely-0123456789"
    [listed] = admin.client.get("/v1/credentials").json()["results"]
    assert listed["problem"] == "sealed under another DJANGO_SECRET_KEY: set it again"
    assert put(admin, "docs-token").status_code == 200  # set again: usable
    assert admin.client.get("/v1/credentials").json()["results"][0]["problem"] is None
