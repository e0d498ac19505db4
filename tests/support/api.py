"""Helpers shared by the tests that go through the API: callers with keys, an agent's body,
the one error shape (and where in it a place's errors are), paging, and posting a message."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from rest_framework.test import APIClient

from accounts.models import Member, Role, Tenant
from accounts.services import api_key_issue, member_ensure

AGENT_BODY = {
    "name": "helper",
    "description": "Helps.",
    "system_prompt": "You help.",
    "model": "scripted:demo",
}

WRITE_METHODS = ("post", "put", "patch", "delete")
HITL = ["approve", "edit", "reject", "respond"]


@dataclass
class Caller:
    """A member with a live key and a client that sends it."""

    member: Member
    key: str
    client: APIClient


def make_caller(tenant: Tenant, email: str, role: str = Role.MEMBER) -> Caller:
    member, _ = member_ensure(tenant=tenant, email=email, role=role)
    issued = api_key_issue(member=member, name="test")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.plaintext}")
    return Caller(member=member, key=issued.plaintext, client=client)


def error_of(response, status: int, code: str | None = None) -> dict:
    """Assert ``response`` is a JSON error in the one shape; returns its ``error`` object."""
    assert response.status_code == status, (response.status_code, response.content)
    assert response["Content-Type"].startswith("application/json"), response["Content-Type"]
    body = response.json()
    assert set(body) == {"error"}, body
    error = body["error"]
    assert set(error) == {"code", "message", "detail"}, error
    assert isinstance(error["code"], str) and error["code"]
    assert isinstance(error["message"], str) and error["message"]
    assert isinstance(error["detail"], dict)
    if code is not None:
        assert error["code"] == code, error
    return error


def errors_at(detail: Any, path: tuple[str | int, ...]) -> Any:
    """The error messages an error's ``detail`` holds for the place ``path`` of the body (DRF
    nests them like the body, a list body's under ``non_field_errors``; a field checked as one
    JSON document lists ``"a/b: message"`` lines under its name); None when it holds none."""
    node = detail.get("non_field_errors", detail) if isinstance(path[0], int) else detail
    for i, step in enumerate(path):
        if isinstance(node, dict) and str(step) in node:
            node = node[str(step)]
        elif isinstance(node, list) and isinstance(step, int) and len(node) > step \
                and isinstance(node[step], dict | list):
            node = node[step]
        elif isinstance(node, list) and all(isinstance(m, str) for m in node):
            rest = "/".join(str(s) for s in path[i:])
            return [m for m in node if m.startswith(rest + ":")]
        else:
            return None
    return node


def walk(client, url: str) -> tuple[list[dict], int]:
    """Every item reachable from ``url`` by following ``next`` links, and the number of pages."""
    items, pages = [], 0
    while url:
        response = client.get(url)
        assert response.status_code == 200, response.content
        body = response.json()
        assert set(body) == {"results", "next", "previous"}
        items += body["results"]
        pages += 1
        url = body["next"] and "?".join(filter(None, urlsplit(body["next"])[2:4]))
    return items, pages


def post_message(caller, session_id: str, text: str = "hello"):
    return caller.client.post(f"/v1/sessions/{session_id}/messages", {"content": text},
                              format="json")


def started_run(caller, make_agent, model: str, text: str) -> tuple[str, str]:
    """A new session of a new agent on ``model`` and the run its message ``text`` started
    (queued: a worker, if any, takes it); their ids."""
    agent = make_agent(caller, model=model)
    session = caller.client.post("/v1/sessions", {"agent": agent["id"]}, format="json").json()
    posted = post_message(caller, session["id"], text)
    assert posted.status_code == 202, posted.content
    return session["id"], posted.json()["run"]["id"]
