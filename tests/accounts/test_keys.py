"""API keys: ``Authorization: Bearer <key>``, stored only as a SHA-512 digest, refused (401) when
missing, malformed, wrong, revoked or belonging to an inactive user."""

from __future__ import annotations

import hashlib

import pytest
from django.db import connection
from rest_framework.test import APIClient

from accounts.models import ApiKey
from accounts.services import api_key_issue, api_key_revoke
from tests.support.api import error_of


def client_for(header: str | None) -> APIClient:
    client = APIClient()
    if header is not None:
        client.credentials(HTTP_AUTHORIZATION=header)
    return client


def row_of(key: str) -> ApiKey:
    return ApiKey.objects.get(prefix=key.split("_")[1])


def assert_401(response) -> dict:
    error = error_of(response, 401)
    assert response["WWW-Authenticate"] == "Bearer"
    return error


def test_a_valid_key_authenticates(alice):
    assert alice.client.get("/v1/agents").status_code == 200


def test_missing_authorization_is_401_with_challenge(anon):
    error = assert_401(anon.get("/v1/agents"))
    assert error["code"] == "not_authenticated"


@pytest.mark.parametrize("method", ["get", "post", "put", "delete"])
def test_missing_authorization_beats_everything_else(anon, method):
    """No key: 401 before method or body are looked at."""
    assert_401(getattr(anon, method)("/v1/agents", {"name": "x"}, format="json"))


@pytest.mark.parametrize("header", [
    "Token {key}",
    "Basic {key}",
    "Bearer",
    "Bearer ",
    "Bearer garbage",
    "Bearer hk_",
    "Bearer hk_zzzzzzzzzzzz_secret",
    "Bearer {prefix_only}",
    "Bearer {wrong_secret}",
    "Bearer {key}x",
    "Bearer {key_upper}",
    "Bearer {key} {key}",
])
def test_bad_credentials_are_401(alice, header):
    key = alice.key
    scheme, prefix, _secret = key.split("_", 2)
    presented = header.format(
        key=key,
        prefix_only=f"{scheme}_{prefix}_",
        wrong_secret=f"{scheme}_{prefix}_{'A' * 43}",
        key_upper=key.upper(),
    )
    error = assert_401(client_for(presented).get("/v1/agents"))
    assert error["code"] == "authentication_failed"


def test_revoked_key_fails_on_the_very_next_request(alice):
    other = api_key_issue(member=alice.member, name="second").plaintext
    assert alice.client.get("/v1/agents").status_code == 200

    api_key_revoke(api_key=row_of(alice.key))

    assert_401(alice.client.get("/v1/agents"))
    assert client_for(f"Bearer {other}").get("/v1/agents").status_code == 200
    assert row_of(alice.key).revoked_at is not None


def test_revoking_twice_keeps_the_first_time(alice):
    first = api_key_revoke(api_key=row_of(alice.key)).revoked_at
    assert api_key_revoke(api_key=row_of(alice.key)).revoked_at == first


def test_inactive_user_is_401(alice):
    user = alice.member.user
    user.is_active = False
    user.save(update_fields=["is_active"])
    assert_401(alice.client.get("/v1/agents"))


def test_stored_digest_is_sha512_hex_of_the_key(alice, bob):
    for caller in (alice, bob):
        row = row_of(caller.key)
        assert row.secret_hash == hashlib.sha512(caller.key.encode()).hexdigest()
        assert len(row.secret_hash) == 128
        assert set(row.secret_hash) <= set("0123456789abcdef")
        assert caller.key.startswith(f"hk_{row.prefix}_")
    assert row_of(alice.key).secret_hash != row_of(bob.key).secret_hash


def test_keys_are_unique_per_issue(alice):
    keys = {api_key_issue(member=alice.member).plaintext for _ in range(5)} | {alice.key}
    assert len(keys) == 6
    assert len({key.split("_")[1] for key in keys}) == 6


def all_stored_text() -> list[tuple[str, str]]:
    """``(table.column, value as text)`` for every column of every row of every table."""
    out = []
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names(cursor):
            columns = [c.name for c in connection.introspection.get_table_description(cursor,
                                                                                       table)]
            cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)}")
            for row in cursor.fetchall():
                for column, value in zip(columns, row, strict=True):
                    if isinstance(value, memoryview | bytes):
                        value = bytes(value).decode("latin-1")
                    if value is not None:
                        out.append((f"{table}.{column}", str(value)))
    return out


def test_no_plaintext_key_is_stored_anywhere(alice, bob, owner, outsider, make_session):
    extra = api_key_issue(member=alice.member, name="extra").plaintext
    make_session(alice)  # exercise the keys, so every write path has run
    owner.client.get("/v1/agents")
    keys = [alice.key, bob.key, owner.key, outsider.key, extra]
    secrets = [key.split("_", 2)[2] for key in keys]

    stored = all_stored_text()
    assert any(where.startswith("api_keys.") for where, _ in stored)
    leaks = [(where, needle[:8]) for where, value in stored
             for needle in keys + secrets if needle in value]
    assert leaks == []

    for row in ApiKey.objects.values():
        for value in row.values():
            assert all(secret not in str(value) for secret in secrets)


def test_last_used_at_is_set_on_use(alice):
    assert row_of(alice.key).last_used_at is None
    assert alice.client.get("/v1/agents").status_code == 200
    first = row_of(alice.key).last_used_at
    assert first is not None
    alice.client.get("/v1/agents")  # inside the resolution window: no second write
    assert row_of(alice.key).last_used_at == first


def test_last_used_at_moves_after_the_window(alice, hango_settings):
    hango_settings(key_last_used_resolution_seconds=0)
    alice.client.get("/v1/agents")
    first = row_of(alice.key).last_used_at
    alice.client.get("/v1/agents")
    assert row_of(alice.key).last_used_at > first


def test_failed_authentication_does_not_touch_last_used_at(alice):
    scheme, prefix, _ = alice.key.split("_", 2)
    assert_401(client_for(f"Bearer {scheme}_{prefix}_{'A' * 43}").get("/v1/agents"))
    assert row_of(alice.key).last_used_at is None
