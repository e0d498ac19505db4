"""Retries (hango_client/retry.py and the cores): a POST carries one Idempotency-Key through
all its tries; 503s and dropped connections are tried again, bounded; the error shape becomes
ApiError. No server: an httpx MockTransport plays the API."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from hango_client import (
    NO_RETRIES,
    ApiError,
    AsyncClient,
    Client,
    ConnectionLost,
    RetryPolicy,
    Unreachable,
)

FAST = RetryPolicy(attempts=3, backoff=0)
ERROR = {"error": {"code": "database_unavailable", "message": "Try again shortly.",
                   "detail": None}}


def flaky(failures: list[str]) -> tuple[list[httpx.Request], httpx.MockTransport]:
    """Answers each request with the next of ``failures`` ("503", "drop", "connect"), then
    201 once they are spent."""
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if failures:
            failure = failures.pop(0)
            if failure == "drop":
                raise httpx.RemoteProtocolError("Server disconnected", request=request)
            if failure == "connect":
                raise httpx.ConnectError("refused", request=request)
            return httpx.Response(int(failure), json=ERROR, headers={"Retry-After": "0"})
        return httpx.Response(201, json={"id": "a1"})

    return seen, httpx.MockTransport(answer)


def test_a_post_is_retried_with_the_same_idempotency_key():
    seen, transport = flaky(["503", "drop"])
    client = Client("http://api.test", "k", retry=FAST, transport=transport)
    assert client.agents.create(name="a", model="m") == {"id": "a1"}
    keys = {request.headers["Idempotency-Key"] for request in seen}
    assert len(seen) == 3 and len(keys) == 1
    client.agents.create(name="b", model="m")  # another call, another key
    assert seen[-1].headers["Idempotency-Key"] not in keys


def test_gets_carry_no_key_and_are_retried_too():
    seen, transport = flaky(["connect", "502"])
    client = Client("http://api.test", "k", retry=FAST, transport=transport)
    client.agents.get("a1")
    assert len(seen) == 3 and "Idempotency-Key" not in seen[0].headers


def test_retries_are_bounded_and_end_in_the_api_error():
    seen, transport = flaky(["503"] * 5)
    client = Client("http://api.test", "k", retry=FAST, transport=transport)
    with pytest.raises(ApiError) as raised:
        client.runs.cancel("r1")
    assert len(seen) == 3
    assert (raised.value.status, raised.value.code) == (503, "database_unavailable")
    assert raised.value.message == "Try again shortly."


def test_no_answer_at_all_is_a_transport_error():
    _, transport = flaky(["connect"] * 5)
    with pytest.raises(Unreachable) as raised:
        Client("http://api.test", "k", retry=FAST, transport=transport).agents.get("a")
    assert isinstance(raised.value, ConnectionError)
    _, transport = flaky(["drop"])
    with pytest.raises(ConnectionLost):
        Client("http://api.test", "k", retry=NO_RETRIES, transport=transport).agents.get("a")


def test_posts_can_be_left_unretried_and_client_errors_are_never_retried():
    seen, transport = flaky(["503"])
    client = Client("http://api.test", "k", transport=transport,
                    retry=RetryPolicy(backoff=0, retry_posts=False))
    with pytest.raises(ApiError):
        client.runs.resume("r1")
    seen, transport = flaky(["409", "409"])
    with pytest.raises(ApiError) as raised:
        Client("http://api.test", "k", retry=FAST, transport=transport).runs.resume("r1")
    assert len(seen) == 1 and raised.value.status == 409


def test_not_hangos_error_shape_still_raises_api_error():
    transport = httpx.MockTransport(lambda request: httpx.Response(404, text="<html>"))
    with pytest.raises(ApiError) as raised:
        Client("http://api.test", "k", transport=transport).agents.get("a")
    assert raised.value.code == "http_error"


def test_the_async_client_retries_the_same_way():
    seen, transport = flaky(["503", "drop"])
    client = AsyncClient("http://api.test", "k", retry=FAST, transport=transport)
    assert asyncio.run(client.agents.create(name="a", model="m")) == {"id": "a1"}
    assert len({request.headers["Idempotency-Key"] for request in seen}) == 1


def test_a_policy_waits_what_retry_after_asks_up_to_its_cap():
    policy = RetryPolicy(backoff=1, max_delay=4)
    asked = httpx.Response(503, headers={"Retry-After": "30"})
    assert policy.delay(1, asked) == 4
    assert 0.5 <= policy.delay(1) <= 1 and 2 <= policy.delay(3) <= 4
    with pytest.raises(ValueError):
        RetryPolicy(attempts=0)
