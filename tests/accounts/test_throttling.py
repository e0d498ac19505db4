"""Per-API-key rate limits: 429 with Retry-After, isolation between keys, the limit's precedence,
the count shared through Redis across processes, fail-open, and the in-process fallback."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis
from rest_framework.test import APIClient

from accounts import keys, throttling
from accounts.models import ApiKey
from accounts.services import api_key_issue
from accounts.throttling import ApiKeyRateThrottle
from tests.support.broker import broker_url

UNREACHABLE_URL = "redis://127.0.0.1:1/0"
LIMIT = 3
URL = "/v1/agents"
ROOT = Path(__file__).resolve().parents[2]


def pinned_now() -> float:
    """Half a minute into the current window: no test crosses a window boundary."""
    return (time.time() // 60) * 60 + 30.5


@pytest.fixture
def redis_url() -> str:
    return broker_url()


def delete_counters(client: redis.Redis) -> None:
    for key in client.scan_iter(match=f"{throttling.KEY_PREFIX}:*"):
        client.delete(key)


@pytest.fixture
def store(redis_url):
    """The suite's Redis database, with no rate-limit counter in it before or after the test.

    Only the counters are deleted: the same database is the Celery broker of the run tests.
    """
    client = redis.Redis.from_url(redis_url)
    delete_counters(client)
    yield client
    delete_counters(client)
    client.close()


@pytest.fixture
def limits(hango_settings, store, redis_url, monkeypatch):
    """A small server default counted in the suite's Redis, with the clock pinned mid-window."""
    hango_settings(rate_limit_per_minute=LIMIT, rate_limit_redis_url=redis_url)
    now = pinned_now()
    monkeypatch.setattr(ApiKeyRateThrottle, "clock", staticmethod(lambda: now))
    throttling.local_counter.clear()
    return now


def prefix_of(plaintext: str) -> str:
    prefix = keys.parse_prefix(plaintext)
    assert prefix is not None
    return prefix


def client_for(plaintext: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {plaintext}")
    return client


def allowed(client: APIClient, attempts: int = 12) -> int:
    """How many requests pass before the first 429."""
    for n in range(attempts):
        response = client.get(URL)
        if response.status_code == 429:
            return n
        assert response.status_code == 200, response.content
    return attempts


def test_over_the_limit_answers_429_with_retry_after(alice, limits):
    for _ in range(LIMIT):
        assert alice.client.get(URL).status_code == 200
    response = alice.client.get(URL)
    assert response.status_code == 429
    # Pinned 30.5 s into the window: it resets in 29.5 s.
    assert response["Retry-After"] == "30"
    error = response.json()["error"]
    assert error["code"] == "rate_limited"
    assert error["message"]
    assert error["detail"] == {}


def test_retry_after_is_whole_seconds_within_the_window(alice, hango_settings, store,
                                                        redis_url):
    hango_settings(rate_limit_per_minute=1, rate_limit_redis_url=redis_url)
    alice.client.get(URL)
    response = alice.client.get(URL)
    if response.status_code == 200:  # crossed a window boundary: a fresh minute
        response = alice.client.get(URL)
    assert response.status_code == 429
    assert 1 <= int(response["Retry-After"]) <= 60


def test_counted_in_redis_per_key_and_window(alice, limits, store):
    alice.client.get(URL)
    alice.client.get(URL)
    key = f"hango:rl:{prefix_of(alice.key)}:{int(limits // 60)}"
    assert store.get(key) == b"2"
    assert 0 < store.ttl(key) <= 61


def test_other_keys_are_unaffected(alice, bob, limits):
    second = api_key_issue(member=alice.member, name="second")
    assert allowed(alice.client) == LIMIT
    assert alice.client.get(URL).status_code == 429
    # Another key of the same member, and a key of another member of the same tenant.
    assert allowed(client_for(second.plaintext)) == LIMIT
    assert allowed(bob.client) == LIMIT


def test_key_limit_beats_tenant_default_beats_server_default(tenant, alice, bob, owner, limits):
    ApiKey.objects.filter(prefix=prefix_of(alice.key)).update(rate_limit_per_minute=2)
    assert allowed(owner.client) == LIMIT  # nothing set: the server default
    tenant.rate_limit_per_minute = 5
    tenant.save(update_fields=["rate_limit_per_minute"])
    assert allowed(bob.client) == 5  # the tenant default
    assert allowed(alice.client) == 2  # the key's own, even below the tenant's


def test_zero_means_no_limit(tenant, alice, limits):
    tenant.rate_limit_per_minute = 0
    tenant.save(update_fields=["rate_limit_per_minute"])
    assert allowed(alice.client, attempts=LIMIT + 3) == LIMIT + 3


SUBPROCESS = """
import json, sys
import django
django.setup()
from types import SimpleNamespace
from accounts.models import ApiKey
from accounts.throttling import ApiKeyRateThrottle

prefix, limit, now, count = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
ApiKeyRateThrottle.clock = staticmethod(lambda: now)
request = SimpleNamespace(auth=ApiKey(prefix=prefix, rate_limit_per_minute=limit))
print(json.dumps([ApiKeyRateThrottle().allow_request(request, None) for _ in range(count)]))
"""


@pytest.mark.slow
def test_the_count_is_shared_across_processes(alice, limits, redis_url):
    """Another process spends two of the key's requests; this one sees the combined count."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "hango_project.settings",
        "HANGO_RATE_LIMIT_REDIS_URL": redis_url,
    }
    result = subprocess.run(
        [sys.executable, "-c", SUBPROCESS, prefix_of(alice.key), str(LIMIT), repr(limits), "2"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert json.loads(result.stdout.strip().splitlines()[-1]) == [True, True]
    assert allowed(alice.client) == LIMIT - 2


def test_fail_open_when_redis_is_unreachable(alice, limits, hango_settings, caplog, monkeypatch):
    hango_settings(rate_limit_per_minute=1, rate_limit_redis_url=UNREACHABLE_URL)
    throttling.redis_warning.reset()
    monkeypatch.setattr(throttling, "_redis_down_until", {})
    monkeypatch.setattr(throttling, "RETRY_REDIS_AFTER_SECONDS", 0.0)  # try Redis every time
    with caplog.at_level(logging.WARNING, logger="accounts.throttling"):
        for _ in range(4):
            assert alice.client.get(URL).status_code == 200
    warnings = [r for r in caplog.records if r.name == "accounts.throttling"]
    assert len(warnings) == 1  # logged once, not once per request
    assert "fail-open" in warnings[0].getMessage()


def test_after_a_redis_failure_redis_is_skipped_for_a_while(alice, limits, hango_settings,
                                                            monkeypatch):
    hango_settings(rate_limit_redis_url=UNREACHABLE_URL)
    monkeypatch.setattr(throttling, "_redis_down_until", {})
    calls = []
    real = throttling._redis_client
    monkeypatch.setattr(throttling, "_redis_client", lambda url: calls.append(url) or real(url))
    for _ in range(LIMIT + 2):
        assert alice.client.get(URL).status_code == 200
    assert calls == [UNREACHABLE_URL]  # one attempt; the rest skipped Redis and were allowed


def test_without_redis_an_in_process_counter(alice, bob, limits, hango_settings, store):
    hango_settings(rate_limit_redis_url="")
    # The database may hold the broker's keys; what matters is that nothing is added to them.
    before = set(store.scan_iter())
    assert allowed(alice.client) == LIMIT
    assert allowed(bob.client) == LIMIT
    assert set(store.scan_iter()) == before


def test_unauthenticated_requests_are_not_throttled(db, anon, limits, hango_settings):
    hango_settings(rate_limit_per_minute=1)
    for _ in range(3):
        assert anon.get("/healthz").status_code == 200
        assert anon.get(URL).status_code == 401
