"""``Client.run`` and ``AsyncClient.run`` (hango_client/client.py, _run.py): a message driven to
its answer, client tools answered with the caller's functions.

The server's client tools (``requires_action``, ``POST /v1/runs/{id}/tool-results``) are being
built on another branch: until they land, an httpx MockTransport plays that contract here
(the runs' JSON as the branch answers it). tests/scenarios/test_sdk.py drives the rest on the
real stack."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from hango_client import (
    ApprovalRequired,
    AsyncClient,
    Client,
    RetryPolicy,
    RunCancelled,
    RunFailed,
    RunTimedOut,
)

CALLS = [{"tool_use_id": "t1", "name": "lookup_order", "input": {"order_id": 42}},
         {"tool_use_id": "t2", "name": "refund", "input": {}},
         {"tool_use_id": "t3", "name": "unknown_tool", "input": {}}]


def run_json(status: str, **fields: Any) -> dict[str, Any]:
    return {"id": "r1", "session": "s1", "status": status, "output": None, "error": None,
            "required_action": None, **fields}


class FakeApi:
    """The contract of the client-tools branch: the run parks with ``required_action``; the
    results' POST answers the run, which then completes with the text the results made."""

    def __init__(self, *, end: str = "completed") -> None:
        self.end = end
        self.submitted: list[Any] = []
        self.waits = 0

    def __call__(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path == "/v1/sessions/s1/messages":
            return httpx.Response(202, json={"message": {"id": "m1"}, "run": run_json("queued")})
        if path == "/v1/runs/r1/tool-results":
            self.submitted.append(json.loads(request.content)["results"])
            return httpx.Response(200, json=run_json("queued"))
        assert path == "/v1/runs/r1" and request.url.params["wait"]
        self.waits += 1
        if not self.submitted:
            return httpx.Response(200, json=run_json("requires_action", required_action={
                "type": "submit_tool_results", "tool_calls": CALLS, "expires_at": None}))
        if self.end == "completed":
            return httpx.Response(200, json=run_json("completed", output={
                "text": "Order 42 ships today.", "stop_reason": "end_turn"}))
        return httpx.Response(200, json=run_json(self.end, error={"message": "boom"}))


def lookup_order(order_id: int) -> dict[str, Any]:
    return {"order": order_id, "status": "shipping"}


def refund() -> str:
    raise PermissionError("refunds need a human")


def test_run_answers_client_tools_with_the_callers_functions():
    api = FakeApi()
    client = Client("http://api.test", "k", transport=httpx.MockTransport(api))
    answer = client.run("s1", "Where is order 42?",
                        tools={"lookup_order": lookup_order, "refund": refund})
    assert answer.text == "Order 42 ships today." and answer.stop_reason == "end_turn"
    assert answer.run["status"] == "completed"
    [results] = api.submitted
    assert results[0] == {"tool_use_id": "t1",
                          "output": json.dumps({"order": 42, "status": "shipping"})}
    assert results[1] == {"tool_use_id": "t2", "is_error": True,
                          "output": "PermissionError: refunds need a human"}
    assert results[2]["is_error"] is True
    assert "no function for the tool 'unknown_tool'" in results[2]["output"]


def test_async_run_awaits_coroutine_tools():
    api = FakeApi()

    async def lookup(order_id: int) -> str:
        await asyncio.sleep(0)
        return f"order {order_id}: shipping"

    client = AsyncClient("http://api.test", "k", transport=httpx.MockTransport(api))
    answer = asyncio.run(client.run({"id": "s1"}, "Where?", tools={"lookup_order": lookup}))
    assert answer.text == "Order 42 ships today."
    assert api.submitted[0][0] == {"tool_use_id": "t1", "output": "order 42: shipping"}


@pytest.mark.parametrize(("end", "error"), [("failed", RunFailed), ("cancelled", RunCancelled)])
def test_a_run_that_ends_without_an_answer_raises(end, error):
    client = Client("http://api.test", "k", transport=httpx.MockTransport(FakeApi(end=end)),
                    retry=RetryPolicy(backoff=0))
    with pytest.raises(error) as raised:
        client.run("s1", "Where?", tools={})
    assert raised.value.run["status"] == end


def test_an_approval_raises_unless_a_handler_decides_it():
    approved: list[Any] = []

    def api(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/messages"):
            return httpx.Response(202, json={"message": {}, "run": run_json("queued")})
        if request.url.path.endswith("/approve"):
            approved.append(json.loads(request.content))
            return httpx.Response(200, json=run_json("completed", output={
                "text": "done", "stop_reason": "end_turn"}))
        return httpx.Response(200, json=run_json("awaiting_approval", pending_approvals=[
            {"tool_use_id": "t9", "name": "word_count"}]))

    client = Client("http://api.test", "k", transport=httpx.MockTransport(api))
    with pytest.raises(ApprovalRequired):
        client.run("s1", "count")
    answer = client.run("s1", "count", on_approval=lambda run: [
        {"tool_use_id": p["tool_use_id"], "type": "approve"} for p in run["pending_approvals"]])
    assert answer.text == "done"
    assert approved == [{"decisions": [{"tool_use_id": "t9", "type": "approve"}]}]


def test_a_run_that_does_not_end_in_time_raises_and_goes_on(monkeypatch):
    def api(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/messages"):
            return httpx.Response(202, json={"message": {}, "run": run_json("queued")})
        return httpx.Response(200, json=run_json("running"))

    client = Client("http://api.test", "k", transport=httpx.MockTransport(api))
    with pytest.raises(RunTimedOut) as raised:
        client.run("s1", "slow", timeout=0)
    assert raised.value.run["status"] == "queued"


def test_calls_already_answered_are_not_answered_again(monkeypatch):
    """The results' POST may answer the run still parked (the server resuming it): run() waits
    on it, a pause between reads, and submits nothing twice."""
    api = FakeApi()
    parked = run_json("requires_action", required_action={
        "type": "submit_tool_results", "tool_calls": CALLS[:1], "expires_at": None})
    reads = []

    def transport(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/runs/r1/tool-results":
            api.submitted.append(json.loads(request.content)["results"])
            return httpx.Response(200, json=parked)
        if request.url.path == "/v1/runs/r1" and api.submitted:
            reads.append(request)
            if len(reads) == 1:
                return httpx.Response(200, json=parked)
        return api(request)

    pauses: list[float] = []
    monkeypatch.setattr("hango_client.client.time.sleep", pauses.append)
    client = Client("http://api.test", "k", transport=httpx.MockTransport(transport))
    assert client.run("s1", "Where?", tools={"lookup_order": lookup_order}).text
    assert len(api.submitted) == 1 and len(reads) == 2 and pauses == [0.0, 0.5, 0.5]


def test_wait_reads_the_run_until_it_ends_or_parks():
    statuses = ["queued", "running", "awaiting_approval"]
    waits: list[str] = []

    def api(request: httpx.Request) -> httpx.Response:
        waits.append(request.url.params["wait"])
        return httpx.Response(200, json=run_json(statuses.pop(0)))

    client = Client("http://api.test", "k", transport=httpx.MockTransport(api))
    assert client.wait({"id": "r1"})["status"] == "awaiting_approval"
    assert waits == ["30", "30", "30"]
