"""Idempotency keys on the API's writes (accounts/idempotent_requests.py, accounts/idempotency.py):
the header's form, a retry answered from the kept answer, a key reused for another request, a
key per tenant, a key in use, what is not kept, and every write route under the rule — walked
from the URL conf, so a new route cannot leave it unnoticed. The retries of each POST route,
after a 503 and a dropped connection, are tests/scenarios/test_idempotent_retries.py."""

from __future__ import annotations

import uuid
from datetime import timedelta
from types import SimpleNamespace

import psycopg2
import pytest
from django.db import connection
from django.urls import URLPattern, URLResolver, get_resolver
from django.utils import timezone

from accounts.idempotency import Claim, purge_expired
from accounts.idempotent_requests import covered_view
from accounts.models import AuditEntry, IdempotencyKey
from agents.models import Agent
from tests.support.api import AGENT_BODY, error_of, make_caller

# Every POST route, by its URL pattern: those whose writes take a key, and those exempt, with
# the reason their view gives. A new POST route fails here until it is listed in one of them
# (and in tests/scenarios/test_idempotent_retries.py's walk, if it takes a key).
COVERED_POSTS = {
    "v1/agents", "v1/agents/<str:agent_id>/memory", "v1/skills", "v1/sessions",
    "v1/sessions/<str:session_id>/messages", "v1/runs/<str:run_id>/cancel",
    "v1/runs/<str:run_id>/resume", "v1/runs/<str:run_id>/approve",
    "v1/runs/<str:run_id>/tool-results", "v1/mcp-servers",
    "v1/webhooks", "v1/webhooks/<str:webhook_id>/rotate", "v1/webhooks/<str:webhook_id>/ping",
    "v1/schedules", "v1/schedules/<str:schedule_id>/run", "v1/eval-suites",
    "v1/eval-suites/<str:suite_id>/cases", "v1/eval-suites/<str:suite_id>/cases/from-session",
    "v1/eval-runs", "v1/eval-runs/<str:eval_run_id>/cancel",
}
EXEMPT_POSTS = {
    "v1/sessions/<str:session_id>/context": "a preview: nothing is written",
    "v1/sessions/<str:session_id>/context/try":
        "a model call, not a write: a retry asks the model again",
}


def _routes(resolver: URLResolver | None = None, prefix: str = ""):
    for entry in (resolver or get_resolver()).url_patterns:
        if isinstance(entry, URLResolver):
            yield from _routes(entry, prefix + str(entry.pattern))
        elif isinstance(entry, URLPattern):
            yield prefix + str(entry.pattern), entry


def _post_routes() -> dict[str, URLPattern]:
    return {route: entry for route, entry in _routes() if route.startswith("v1/")
            and hasattr(getattr(entry.callback, "cls", None), "post")}


def test_every_post_route_takes_a_key_or_says_why_not():
    routes = _post_routes()
    assert set(routes) == COVERED_POSTS | set(EXEMPT_POSTS), "a new POST route: list it above"
    for route, entry in routes.items():
        view = entry.callback.cls  # type: ignore[attr-defined]
        if route in EXEMPT_POSTS:
            assert view.idempotency_exempt == EXEMPT_POSTS[route]
        else:
            assert not getattr(view, "idempotency_exempt", ""), route


def test_every_write_of_an_api_view_is_covered_but_the_exempt():
    for route, entry in _routes():
        view = getattr(entry.callback, "cls", None)
        if not route.startswith("v1/") or view is None or route in EXEMPT_POSTS:
            continue
        assert covered_view(SimpleNamespace(func=entry.callback)) is view, route  # type: ignore[arg-type]


def _key() -> str:
    return f"k-{uuid.uuid4()}"


def _create(caller, key: str, body: dict | None = None):
    return caller.client.post("/v1/agents", body or AGENT_BODY, format="json",
                              HTTP_IDEMPOTENCY_KEY=key)


def test_the_same_key_and_body_answer_the_first_answer_once(alice):
    key = _key()
    first = _create(alice, key)
    assert first.status_code == 201, first.content
    assert "Idempotent-Replayed" not in first
    audits = AuditEntry.objects.count()
    again = _create(alice, key, {**AGENT_BODY})  # the same data, keys in another order too
    assert again.status_code == 201
    assert again["Idempotent-Replayed"] == "true"
    assert again.json() == first.json()
    assert Agent.objects.filter(tenant=alice.member.tenant).count() == 1
    assert AuditEntry.objects.count() == audits


def test_a_body_that_differs_only_in_key_order_and_spacing_is_the_same(alice):
    key = _key()
    first = alice.client.generic("POST", "/v1/agents", '{"name": "a", "description": "d", '
                                 '"system_prompt": "p", "model": "scripted:demo"}',
                                 content_type="application/json", HTTP_IDEMPOTENCY_KEY=key)
    again = alice.client.generic("POST", "/v1/agents", '{"model":"scripted:demo","name":"a",'
                                 '"system_prompt":"p","description":"d"}',
                                 content_type="application/json", HTTP_IDEMPOTENCY_KEY=key)
    assert again.status_code == first.status_code == 201
    assert again.json() == first.json()


def test_the_same_key_with_another_body_or_route_is_422(alice):
    key = _key()
    assert _create(alice, key).status_code == 201
    error = error_of(_create(alice, key, {**AGENT_BODY, "name": "other"}), 422,
                     "idempotency_key_reused")
    assert error["detail"] == {"key": key, "method": "POST", "path": "/v1/agents"}
    error_of(alice.client.post("/v1/skills", {"name": "s", "description": "d"}, format="json",
                               HTTP_IDEMPOTENCY_KEY=key), 422, "idempotency_key_reused")
    assert Agent.objects.count() == 1
    # A method the route does not take is its 405, the key notwithstanding (the fuzz's find).
    error_of(alice.client.put("/v1/agents", AGENT_BODY, format="json", HTTP_IDEMPOTENCY_KEY=key),
             405, "method_not_allowed")


def test_a_key_is_per_tenant(alice, outsider):
    key = _key()
    mine, theirs = _create(alice, key), _create(outsider, key)
    assert mine.status_code == theirs.status_code == 201
    assert "Idempotent-Replayed" not in theirs
    assert mine.json()["id"] != theirs.json()["id"]


def test_a_key_answers_its_member_only(alice, bob):
    """Per tenant, one request a key; the answer is its sender's: another of the member's API
    keys (a service that rotated its key mid-retry) is answered, another member is refused
    and told nothing of the first request."""
    key = _key()
    first = _create(alice, key)
    rotated = make_caller(alice.member.tenant, alice.member.user.email, alice.member.role)
    assert rotated.key != alice.key
    again = _create(rotated, key)
    assert again.json() == first.json() and again["Idempotent-Replayed"] == "true"
    error = error_of(_create(bob, key), 422, "idempotency_key_reused")
    assert error["detail"] == {"key": key}
    assert Agent.objects.count() == 1


@pytest.mark.parametrize("raw", ["", "a b", "é", "x" * 256, "tab\there"])
def test_a_key_that_is_not_1_to_255_visible_ascii_characters_is_400(alice, raw):
    error_of(alice.client.post("/v1/agents", AGENT_BODY, format="json",
                               HTTP_IDEMPOTENCY_KEY=raw), 400, "invalid_idempotency_key")
    assert not Agent.objects.exists()


def test_a_refused_answer_is_not_kept_and_its_retry_runs_again(alice):
    key = _key()
    error_of(_create(alice, key, {**AGENT_BODY, "model": 5}), 422, "validation_error")
    assert not IdempotencyKey.objects.exists()
    fixed = _create(alice, key, {**AGENT_BODY, "model": 5})
    assert fixed.status_code == 422 and "Idempotent-Replayed" not in fixed


def test_a_request_refused_before_its_view_keeps_nothing(alice, outsider):
    key = _key()
    anonymous = alice.client.__class__()
    error_of(anonymous.post("/v1/agents", AGENT_BODY, format="json",
                            HTTP_IDEMPOTENCY_KEY=key), 401)
    assert not IdempotencyKey.objects.exists()


@pytest.mark.postgresql(reason="another connection holding the key's advisory lock")
@pytest.mark.django_db(transaction=True)
def test_a_key_in_use_by_a_request_under_way_is_409(alice):
    """Two requests with one key never both run: while one holds the key's lock (here another
    connection, as a concurrent request would), the other is told to come back."""
    key = _key()
    claim = Claim(member=alice.member, key=key, method="POST", path="/v1/agents",
                  fingerprint="")
    other = psycopg2.connect(**connection.get_connection_params())
    try:
        with other.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", claim.lock_key())
            error = error_of(_create(alice, key), 409, "idempotency_key_in_progress")
            assert error["detail"] == {"key": key}
        other.rollback()
    finally:
        other.close()
    assert _create(alice, key).status_code == 201
    assert Agent.objects.count() == 1


def test_patch_and_delete_take_a_key_too(alice, make_agent):
    agent = make_agent(alice)
    key = _key()
    url = f"/v1/agents/{agent['id']}"
    first = alice.client.delete(url, HTTP_IDEMPOTENCY_KEY=key)
    assert first.status_code == 204
    again = alice.client.delete(url, HTTP_IDEMPOTENCY_KEY=key)
    assert again.status_code == 204 and again["Idempotent-Replayed"] == "true"
    error_of(alice.client.delete(url), 404)  # without the key: the agent is gone


def test_keys_older_than_the_setting_are_removed_and_no_longer_answer(alice, hango_settings):
    hango_settings(idempotency_key_hours=24)
    key = _key()
    first = _create(alice, key)
    IdempotencyKey.objects.filter(key=key).update(
        created_at=timezone.now() - timedelta(hours=24, seconds=1))
    again = _create(alice, key)  # expired: a new request
    assert again.status_code == 201 and again.json()["id"] != first.json()["id"]
    IdempotencyKey.objects.update(created_at=timezone.now() - timedelta(hours=25))
    assert purge_expired() == "removed 1 expired idempotency keys"
    assert not IdempotencyKey.objects.exists()
    assert purge_expired() == ""


def test_every_worker_s_reconciler_removes_them():
    from runs.execution import reconciler

    passes = {p.name: p for p in reconciler._passes}
    assert passes["idempotency_keys"].run is purge_expired
    assert passes["idempotency_keys"].every() == 600


def test_a_key_kept_under_another_secret_key_says_so(alice, settings):
    key = _key()
    assert _create(alice, key).status_code == 201
    settings.SECRET_KEY = "another secret key, after a rotation"
    error = error_of(_create(alice, key), 409, "idempotency_key_unreadable")
    assert error["detail"] == {"key": key, "status": 201, "method": "POST",
                               "path": "/v1/agents"}
    assert Agent.objects.count() == 1
