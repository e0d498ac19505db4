"""Retries with an ``Idempotency-Key``, route by route and fault by fault: every POST route that
takes a key (walked from the schema: a new route fails here until it says how to call it) does
its write once for two requests with one key and answers the first answer twice; a commit whose
reply is lost (a 503, yet stored) and a client gone before its answer (a real gunicorn) are
answered on retry, and the run behind the message ran once, on a real worker. And the message
post without a key answers what it stored when the database goes away after its commit."""

from __future__ import annotations

import http.client
import json
import socket
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.db import connection

from accounts.models import AuditEntry, IdempotencyKey
from agents.models import Agent, MemoryFile, Skill
from integrations.models import McpServer
from runs.models import Message, Run
from schedules.models import Fire, Schedule
from tests.support import workers
from tests.support.api import error_of
from tests.support.approvals import ALL, paused_run
from tests.support.openapi import VALID, Operation, operations
from tests.support.pgproxy import PgProxy
from tests.support.runs import wait_for_run
from tests.support.servers import GunicornProcess
from webhooks.models import Delivery, Endpoint

EXEMPT = {"sessions_context_preview", "sessions_context_try"}  # tests/accounts/…requests.py
# How each keyed POST is called: who calls it, its body (None: none), and what to do first.
CALLS: dict[str, tuple[str, Any, Callable[[Any, dict[str, str]], None] | None]] = {
    "agents_create": ("alice", VALID["agents_create"], None),
    "agents_memory_create": ("alice", VALID["agents_memory_create"], None),
    "skills_create": ("alice", VALID["skills_create"], None),
    "sessions_create": ("alice", VALID["sessions_create"], None),
    "sessions_messages_create": ("alice", {"content": "hi", "multitask": "enqueue"}, None),
    "runs_cancel": ("alice", None, None),
    "runs_resume": ("alice", None, lambda caller, ids: _ok(caller.client.post(
        f"/v1/runs/{ids['run_id']}/cancel"))),
    "runs_approve": ("alice", "paused", None),  # its own test: a run paused on a real batch
    "mcp_servers_create": ("admin", {"name": "retried", "transport": "sse",
                                     "url": "https://retried.example.invalid/sse"}, None),
    "webhooks_create": ("alice", {"url": "https://hooks.example.com/retried"}, None),
    "webhooks_rotate": ("alice", None, None),
    "webhooks_ping": ("alice", None, None),
    "schedules_create": ("alice", VALID["schedules_create"], None),
    "schedules_run": ("alice", None, None),
}


def _ok(response) -> None:
    assert response.status_code < 300, response.content


def _posts() -> list[Operation]:
    return [op for op in operations() if op.method == "post" and op.operation_id not in EXEMPT]


def _effects() -> tuple[int, ...]:
    """Rows a write may add: a second request that adds one did the write twice."""
    return tuple(model.objects.count() for model in (
        Agent, MemoryFile, Skill, Message, Run, McpServer, Endpoint, Delivery, Schedule, Fire,
        AuditEntry))


def _filled(body: Any, ids: dict[str, str]) -> Any:
    return json.loads(json.dumps(body).replace("{agent_id}", ids["agent_id"]))


def test_every_keyed_post_route_is_walked():
    assert {op.operation_id for op in _posts()} == set(CALLS), "say how to call a new route"


@pytest.mark.parametrize("operation", [op for op in _posts()
                                       if op.operation_id != "runs_approve"], ids=str)
def test_a_post_sent_twice_with_one_key_is_done_once(request, route_ids, operation: Operation):
    who, body, first = CALLS[operation.operation_id]
    caller = request.getfixturevalue(who)
    if first is not None:
        first(caller, route_ids)
    url, body = operation.url(route_ids), _filled(body, route_ids) if body else None
    key = str(uuid.uuid4())
    before = _effects()
    answer = caller.client.post(url, body, format="json", HTTP_IDEMPOTENCY_KEY=key)
    assert 200 <= answer.status_code < 300, answer.content
    done = _effects()
    assert done != before  # it did something (an audit row at least)
    again = caller.client.post(url, body, format="json", HTTP_IDEMPOTENCY_KEY=key)
    assert (again.status_code, again.json()) == (answer.status_code, answer.json())
    assert again["Idempotent-Replayed"] == "true"
    assert _effects() == done
    other = {**(body or {}), "other": True}
    error_of(caller.client.post(url, other, format="json", HTTP_IDEMPOTENCY_KEY=key), 422,
             "idempotency_key_reused")
    assert _effects() == done


def test_an_approval_sent_twice_with_one_key_decides_once(alice, hitl_session, inline_runs):
    run = paused_run(alice, hitl_session)
    key, url = str(uuid.uuid4()), f"/v1/runs/{run['id']}/approve"
    body = {"decisions": [{"tool_use_id": p["tool_use_id"], "type": "approve"}
                          for p in run["pending_approvals"]]}
    answer = alice.client.post(url, body, format="json", HTTP_IDEMPOTENCY_KEY=key)
    assert answer.status_code == 202, answer.content
    assert wait_for_run(run["id"]).status == "completed"
    decided = AuditEntry.objects.filter(action="run.approve").count()
    again = alice.client.post(url, body, format="json", HTTP_IDEMPOTENCY_KEY=key)
    assert (again.status_code, again.json()) == (202, answer.json())
    assert AuditEntry.objects.filter(action="run.approve").count() == decided == 1
    error_of(alice.client.post(url, body, format="json"), 409)  # without it: decided already
    assert ALL


def test_another_tenants_same_key_is_its_own(alice, outsider, make_session):
    key = str(uuid.uuid4())
    answers = [caller.client.post(f"/v1/sessions/{make_session(caller)['id']}/messages",
                                  {"content": "hi"}, format="json", HTTP_IDEMPOTENCY_KEY=key)
               for caller in (alice, outsider)]
    assert [a.status_code for a in answers] == [202, 202]
    assert "Idempotent-Replayed" not in answers[1]
    assert answers[0].json()["run"]["id"] != answers[1].json()["run"]["id"]
    assert IdempotencyKey.objects.filter(key=key).count() == 2


# -- faults, on a real worker -------------------------------------------------------------------

@pytest.fixture
def pg_proxy(worker) -> Iterator[PgProxy]:
    """This process's connection to PostgreSQL goes through a :class:`PgProxy` (put back
    afterwards); the worker, started first, keeps its own, so no COMMIT of its takes the
    fault."""
    settings = connection.settings_dict
    proxy = PgProxy(settings["HOST"] or "127.0.0.1", int(settings["PORT"] or 5432))
    saved = settings["HOST"], settings["PORT"]
    connection.close()
    settings["HOST"], settings["PORT"] = "127.0.0.1", proxy.port
    try:
        yield proxy
    finally:
        connection.close()
        settings["HOST"], settings["PORT"] = saved
        proxy.close()


@pytest.fixture
def worker(start_worker):
    """A real worker whose reconciler sends within a second a run whose send was lost."""
    return start_worker(HANGO_RECONCILE_SECONDS="1", HANGO_RECONCILE_GRACE_SECONDS="1")


def _ran_once(session_id: str, run_id: str) -> None:
    assert wait_for_run(run_id).status == "completed"
    assert list(Run.objects.filter(session_id=session_id).values_list("id", flat=True)) == [
        uuid.UUID(run_id)]
    posted = [m for m in Message.objects.filter(session_id=session_id, role="user")
              if m.content[0]["type"] == "text"]  # the others carry tool results
    assert len(posted) == 1


def test_a_503_from_a_commit_whose_reply_was_lost_is_answered_on_retry(
        alice, make_session, pg_proxy):
    session = make_session(alice)
    url, key = f"/v1/sessions/{session['id']}/messages", str(uuid.uuid4())
    pg_proxy.arm("lose_reply")
    lost = alice.client.post(url, {"content": "hi"}, format="json", HTTP_IDEMPOTENCY_KEY=key)
    error_of(lost, 503, "database_unavailable")
    assert pg_proxy.faults_done == 1
    stored = Run.objects.get(session_id=session["id"])  # it committed all the same
    retry = alice.client.post(url, {"content": "hi"}, format="json", HTTP_IDEMPOTENCY_KEY=key)
    assert retry.status_code == 202 and retry["Idempotent-Replayed"] == "true"
    assert retry.json()["run"]["id"] == str(stored.pk)
    _ran_once(session["id"], str(stored.pk))  # sent by the reconciler: its send was dropped


def test_a_post_without_a_key_answers_what_it_stored_when_the_database_goes_after_commit(
        alice, make_session, pg_proxy):
    session = make_session(alice)
    pg_proxy.arm("cut_after")
    posted = alice.client.post(f"/v1/sessions/{session['id']}/messages", {"content": "hi"},
                               format="json")
    assert posted.status_code == 202, posted.content
    assert pg_proxy.faults_done == 1
    body = posted.json()
    assert body["run"]["status"] == "queued" and body["run"]["cost"] == {
        "by_currency": [], "unpriced_calls": 0}
    assert body["message"]["seq"] == 1
    _ran_once(session["id"], body["run"]["id"])


def _post_and_hang_up(port: int, path: str, key: str, api_key: str, body: bytes) -> None:
    """Send the whole request, then close the connection without reading a byte of the
    answer: the client of a web server killed mid-request sees no more than this."""
    head = (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {api_key}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            f"Idempotency-Key: {key}\r\nConnection: close\r\n\r\n")
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(head.encode() + body)
        conn.shutdown(socket.SHUT_RDWR)


def test_a_post_whose_client_hung_up_is_answered_on_retry(alice, make_session, broker, worker,
                                                          tmp_path):
    web = GunicornProcess(tmp_path, database_url=workers.test_database_url(),
                          env={"CELERY_BROKER_URL": broker})
    try:
        session = make_session(alice)
        path, key = f"/v1/sessions/{session['id']}/messages", str(uuid.uuid4())
        body = json.dumps({"content": "hi"}).encode()
        _post_and_hang_up(web.port, path, key, alice.key, body)
        deadline = time.monotonic() + 30
        while True:  # until the first request is done: meanwhile its key is in use
            conn = http.client.HTTPConnection("127.0.0.1", web.port, timeout=10)
            conn.request("POST", path, body, {"Authorization": f"Bearer {alice.key}",
                                              "Content-Type": "application/json",
                                              "Idempotency-Key": key})
            retry = conn.getresponse()
            answer = json.loads(retry.read())
            conn.close()
            if retry.status != 409 or time.monotonic() > deadline:
                break
            assert answer["error"]["code"] == "idempotency_key_in_progress", answer
            time.sleep(0.1)
        assert retry.status == 202, answer
        assert retry.getheader("Idempotent-Replayed") == "true"
        _ran_once(session["id"], answer["run"]["id"])
    finally:
        web.stop()
