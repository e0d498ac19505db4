"""The API under a staff user's admin login session (the admin's own screens call it so): CSRF on
unsafe methods, staff only, the tenant named by ``X-Hango-Tenant`` (optional for a member of one
tenant), and then exactly a key's rules — the member's scoping, its rate limit, its name on the
audit rows and usage rows."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import pytest
import redis
from django.contrib.auth import get_user_model
from django.test import Client

from accounts import throttling
from accounts.models import AuditAction, AuditEntry, Member, Role, Tenant, UsageRecord
from accounts.throttling import ApiKeyRateThrottle
from runs.models import Message
from tests.support.api import AGENT_BODY, error_of
from tests.support.broker import broker_url


class Browser:
    """A logged-in Django test client that checks CSRF as a browser's requests are checked,
    holding the csrftoken cookie the admin's pages set."""

    def __init__(self, user, *, tenant: Tenant | None = None) -> None:
        self.client = Client(enforce_csrf_checks=True)
        self.client.force_login(user)
        assert self.client.get("/admin/").status_code == 200 or not user.is_staff
        self.tenant = tenant

    def headers(self, csrf: bool = True, tenant: str | None = None) -> dict[str, str]:
        headers = {}
        if csrf and "csrftoken" in self.client.cookies:
            headers["X-CSRFToken"] = self.client.cookies["csrftoken"].value
        tenant = tenant if tenant is not None else (str(self.tenant.pk) if self.tenant else None)
        if tenant is not None:
            headers["X-Hango-Tenant"] = tenant
        return headers

    def get(self, url: str, **kw: Any):
        return self.client.get(url, headers=self.headers(**kw))

    def send(self, method: str, url: str, body: Any, **kw: Any):
        return getattr(self.client, method)(url, json.dumps(body), content_type="application/json",
                                            headers=self.headers(**kw))


def staff_user(email: str, *, staff: bool = True, memberships: dict[Tenant, str] | None = None):
    user = get_user_model().objects.create_user(email, email, "pw", is_staff=staff)
    for tenant, role in (memberships or {}).items():
        Member.objects.create(tenant=tenant, user=user, role=role)
    return user


@pytest.fixture
def carol(tenant):
    """A staff user, an admin of ``tenant`` and of nothing else."""
    return staff_user("carol@acme.test", memberships={tenant: Role.ADMIN})


def test_a_staff_member_of_one_tenant_needs_no_tenant_header(carol, alice, make_agent):
    agent = make_agent(alice)
    response = Browser(carol).get("/v1/agents")
    assert response.status_code == 200, response.content
    assert [a["id"] for a in response.json()["results"]] == [agent["id"]]  # an admin's view


def test_unsafe_methods_need_the_csrf_token(carol):
    browser = Browser(carol)
    refused = browser.send("post", "/v1/agents", AGENT_BODY, csrf=False)
    error = error_of(refused, 403, "csrf_failed")
    assert "X-CSRFToken" in error["message"]
    created = browser.send("post", "/v1/agents", AGENT_BODY)
    assert created.status_code == 201, created.content
    assert created.json()["owner"] == str(Member.objects.get(user=carol).pk)
    assert browser.get("/v1/agents", csrf=False).status_code == 200  # a read needs none


def test_a_key_wins_over_the_login_session_and_needs_no_csrf(carol, alice):
    browser = Browser(carol)
    response = browser.client.post("/v1/agents", json.dumps(AGENT_BODY),
                                   content_type="application/json",
                                   headers={"Authorization": f"Bearer {alice.key}"})
    assert response.status_code == 201, response.content
    assert response.json()["owner"] == str(alice.member.pk)


def test_a_non_staff_users_session_is_refused(tenant):
    user = staff_user("dave@acme.test", staff=False, memberships={tenant: Role.OWNER})
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    error = error_of(client.get("/v1/agents"), 403, "staff_only")
    assert "Bearer" in error["message"]
    # The public schema and docs read no credentials: that session does not refuse them.
    assert client.get("/v1/schema").status_code == 200
    assert client.get("/v1/docs").status_code == 200


def test_no_login_session_is_a_401_naming_the_key(client, db):
    error = error_of(client.get("/v1/agents"), 401, "not_authenticated")
    assert "Bearer" in error["message"]


def test_the_tenant_header_picks_among_several_memberships(tenant, other_tenant, alice,
                                                            outsider, make_agent):
    mine, theirs = make_agent(alice), make_agent(outsider)
    user = staff_user("erin@example.test", memberships={tenant: Role.OWNER,
                                                        other_tenant: Role.OWNER})
    browser = Browser(user)
    error = error_of(browser.get("/v1/agents"), 400, "tenant_required")
    assert error["detail"]["tenants"] == [{"id": str(tenant.pk), "name": "acme"},
                                          {"id": str(other_tenant.pk), "name": "globex"}]
    for t, agent in ((tenant, mine), (other_tenant, theirs)):
        listed = browser.get("/v1/agents", tenant=str(t.pk)).json()["results"]
        assert [a["id"] for a in listed] == [agent["id"]]


@pytest.mark.parametrize("header, status, code", [
    ("not-a-uuid", 400, "invalid_tenant"),
    ("{other}", 403, "not_a_member"),       # a tenant the user is not a member of
    ("{unknown}", 403, "not_a_member"),     # no such tenant: the same answer
])
def test_a_bad_or_foreign_tenant_header_is_a_clear_error(carol, other_tenant, header, status,
                                                         code):
    header = header.format(other=other_tenant.pk, unknown=uuid.uuid4())
    error = error_of(Browser(carol).get("/v1/agents", tenant=header), status, code)
    assert "X-Hango-Tenant" in error["message"]


def test_a_staff_user_of_no_tenant_is_told_so(db):
    root = get_user_model().objects.create_superuser("root@example.com", "root@example.com", "pw")
    error = error_of(Browser(root).get("/v1/agents"), 403, "not_a_member")
    assert "not a member of any tenant" in error["message"]


def test_another_tenants_objects_are_the_missing_id_404(carol, outsider, make_session):
    session = make_session(outsider)
    browser = Browser(carol)
    for url in (f"/v1/sessions/{session['id']}", f"/v1/sessions/{session['id']}/context",
                f"/v1/agents/{session['agent']}/context-overrides"):
        foreign = error_of(browser.get(url), 404, "not_found")
        missing = error_of(browser.get(url.replace(session["id"], str(uuid.uuid4()))
                                       .replace(session["agent"], str(uuid.uuid4()))), 404)
        assert foreign == missing
    put = browser.send("put", f"/v1/sessions/{session['id']}/context-overrides",
                       [{"part": "message:1", "action": "exclude"}])
    error_of(put, 404, "not_found")


def test_a_plain_members_session_sees_only_their_own(tenant, alice, make_session):
    frank = staff_user("frank@acme.test", memberships={tenant: Role.MEMBER})
    session = make_session(alice)
    error_of(Browser(frank).get(f"/v1/sessions/{session['id']}"), 404, "not_found")


def test_writes_and_tries_are_the_members_in_the_audit_and_usage_rows(carol, alice,
                                                                      make_session,
                                                                      inline_runs):
    session = make_session(alice)
    alice.client.post(f"/v1/sessions/{session['id']}/messages", {"content": "count these"},
                      format="json")
    browser, member = Browser(carol), Member.objects.get(user=carol)
    saved = browser.send("put", f"/v1/sessions/{session['id']}/context-overrides",
                         [{"part": "message:5", "action": "exclude"}])
    assert saved.status_code == 200, saved.content
    messages = Message.objects.filter(session_id=session["id"]).count()
    tried = browser.send("post", f"/v1/sessions/{session['id']}/context/try",
                         {"message": "And now?"})
    assert tried.status_code == 200, tried.content
    assert Message.objects.filter(session_id=session["id"]).count() == messages
    rows = AuditEntry.objects.filter(action__in=[AuditAction.CONTEXT_OVERRIDE,
                                                 AuditAction.CONTEXT_TRY])
    assert {(r.action, r.actor_id) for r in rows} == {(AuditAction.CONTEXT_OVERRIDE, member.pk),
                                                       (AuditAction.CONTEXT_TRY, member.pk)}
    usage = UsageRecord.objects.get(purpose="context_try")
    assert (usage.tenant_id, str(usage.session_id), usage.run_id) == (
        member.tenant_id, session["id"], None)


@pytest.fixture
def counters(hango_settings, monkeypatch):
    """A limit of 3 a minute counted in the suite's Redis, the clock pinned mid-window."""
    url = broker_url()
    hango_settings(rate_limit_per_minute=3, rate_limit_redis_url=url)
    now = (time.time() // 60) * 60 + 30.5
    monkeypatch.setattr(ApiKeyRateThrottle, "clock", staticmethod(lambda: now))
    store = redis.Redis.from_url(url)
    for key in store.scan_iter(match=f"{throttling.KEY_PREFIX}:*"):
        store.delete(key)
    yield store, int(now // 60)
    for key in store.scan_iter(match=f"{throttling.KEY_PREFIX}:*"):
        store.delete(key)
    store.close()


def test_a_login_session_is_rate_limited_per_member(carol, alice, counters, tenant):
    store, window = counters
    browser = Browser(carol)
    statuses = [browser.get("/v1/agents").status_code for _ in range(4)]
    assert statuses == [200, 200, 200, 429]
    member = Member.objects.get(user=carol)
    assert store.get(f"{throttling.KEY_PREFIX}:member:{member.pk}:{window}") == b"4"
    assert alice.client.get("/v1/agents").status_code == 200  # a key of the tenant: its own count
    tenant.rate_limit_per_minute = 10
    tenant.save(update_fields=["rate_limit_per_minute"])
    assert browser.get("/v1/agents").status_code == 200  # the tenant's limit applies to it
