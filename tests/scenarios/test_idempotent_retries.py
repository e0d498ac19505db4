"""Retries with an ``Idempotency-Key``, route by route and fault by fault. Every POST route that
takes a key (walked from the schema: a new route fails here until it says how it is called)
does its write once for two requests with one key and answers the first answer twice; and each
one answers its first answer on retry after a commit whose reply was lost (a 503, yet stored:
a proxy in front of PostgreSQL cuts the connection at the COMMIT) and after its client hung up
on a real gunicorn. For the message post, on a real worker, the run behind it ran once. And the
message post without a key answers what it stored when the database goes away after its
commit."""

from __future__ import annotations

import http.client
import json
import socket
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from django.db import connection

from accounts.models import AuditEntry, IdempotencyKey
from agents.models import Agent, MemoryFile, Skill
from evals.models import EvalRun
from integrations.models import McpServer
from runs.models import Message, Run
from schedules.models import Fire, Schedule
from tests.support import workers
from tests.support.api import Caller, error_of
from tests.support.approvals import ALL, paused_run
from tests.support.openapi import VALID, Operation, operations
from tests.support.pgproxy import PgProxy
from tests.support.runs import wait_for_run
from tests.support.servers import GunicornProcess
from webhooks.models import Delivery, Endpoint

EXEMPT = {"sessions_context_preview", "sessions_context_try"}  # tests/accounts/…requests.py
def _fresh_run(caller: Caller, ids: dict[str, str]) -> dict[str, str]:
    """``ids`` with a run of its own (queued: nothing executes it meanwhile)."""
    session = caller.client.post("/v1/sessions", {"agent": ids["agent_id"]}, format="json")
    posted = caller.client.post(f"/v1/sessions/{session.json()['id']}/messages",
                                {"content": "hi"}, format="json")
    assert posted.status_code == 202, posted.content
    return {**ids, "run_id": posted.json()["run"]["id"]}


def _cancelled_run(caller: Caller, ids: dict[str, str]) -> dict[str, str]:
    ids = _fresh_run(caller, ids)
    _ok(caller.client.post(f"/v1/runs/{ids['run_id']}/cancel"))
    return ids


def _running_eval_run(caller: Caller, ids: dict[str, str]) -> dict[str, str]:
    """``ids`` with an eval run of its own still running (no case started: nothing ends it)."""
    eval_run = EvalRun.objects.create(tenant_id=caller.member.tenant_id, member=caller.member,
                                      suite_id=ids["suite_id"], agent_id=ids["agent_id"])
    return {**ids, "eval_run_id": str(eval_run.pk)}


# How each keyed POST is called: who calls it, its body (None: none), and what it needs first.
CALLS: dict[str, tuple[str, Any, Callable[[Caller, dict[str, str]], dict[str, str]] | None]] = {
    "agents_create": ("alice", VALID["agents_create"], None),
    "agents_memory_create": ("alice", VALID["agents_memory_create"], None),
    "skills_create": ("alice", VALID["skills_create"], None),
    "sessions_create": ("alice", VALID["sessions_create"], None),
    "sessions_messages_create": ("alice", {"content": "hi", "multitask": "enqueue"}, None),
    "runs_cancel": ("alice", None, _fresh_run),
    "runs_resume": ("alice", None, _cancelled_run),
    "runs_approve": ("alice", "paused", None),  # its own test: a run paused on a real batch
    # Its own test too (tests/runs/intake/test_client_results.py): a run parked on a client call.
    "runs_tool_results": ("alice", "parked", None),
    "mcp_servers_create": ("admin", {"name": "retried", "transport": "sse",
                                     "url": "https://retried.example.invalid/sse"}, None),
    "webhooks_create": ("alice", {"url": "https://hooks.example.com/retried"}, None),
    "webhooks_rotate": ("alice", None, None),
    "webhooks_ping": ("alice", None, None),
    "schedules_create": ("alice", VALID["schedules_create"], None),
    "schedules_run": ("alice", None, None),
    "eval_suites_create": ("alice", VALID["eval_suites_create"], None),
    "eval_suites_cases_create": ("alice", VALID["eval_suites_cases_create"], None),
    "eval_suites_cases_from_session": ("alice", VALID["eval_suites_cases_from_session"], None),
    "eval_runs_create": ("alice", VALID["eval_runs_create"], None),
    "eval_runs_cancel": ("alice", None, _running_eval_run),
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
    text = json.dumps(body)
    for name in ("agent_id", "session_id", "suite_id"):
        text = text.replace("{" + name + "}", ids.get(name, ""))
    return json.loads(text)


def test_every_keyed_post_route_is_walked():
    assert {op.operation_id for op in _posts()} == set(CALLS), "say how to call a new route"


def _prepared(request, operation: Operation, ids: dict[str, str]) -> tuple[Caller, str, Any]:
    """Who sends the operation, to which URL, with which body, once what it needs is done."""
    who, body, first = CALLS[operation.operation_id]
    caller = request.getfixturevalue(who)
    if first is not None:
        ids = first(caller, ids)
    return caller, operation.url(ids), _filled(body, ids) if body else None


# Every keyed POST but the approval, which needs a run paused on a real batch (its own test).
WALKED = [op for op in _posts() if op.operation_id not in ("runs_approve", "runs_tool_results")]


@pytest.mark.parametrize("operation", WALKED, ids=str)
def test_a_post_sent_twice_with_one_key_is_done_once(request, route_ids, operation: Operation):
    caller, url, body = _prepared(request, operation, route_ids)
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

@contextmanager
def _through_proxy() -> Iterator[PgProxy]:
    """This process's connection to PostgreSQL goes through a :class:`PgProxy` (put back
    afterwards); processes started before keep their own."""
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
def pg_proxy(transactional_db) -> Iterator[PgProxy]:
    with _through_proxy() as proxy:
        yield proxy


def _worker(start_worker):
    """A real worker whose reconciler sends within a second a run whose send was lost."""
    return start_worker(HANGO_RECONCILE_SECONDS="1", HANGO_RECONCILE_GRACE_SECONDS="1")


@pytest.fixture
def worker_then_proxy(start_worker) -> Iterator[PgProxy]:
    """A real worker, then the proxy: the worker keeps its own connection, so no COMMIT of its
    takes the fault."""
    _worker(start_worker)
    with _through_proxy() as proxy:
        yield proxy


def _ran_once(session_id: str, run_id: str) -> None:
    assert wait_for_run(run_id).status == "completed"
    assert list(Run.objects.filter(session_id=session_id).values_list("id", flat=True)) == [
        uuid.UUID(run_id)]
    posted = [m for m in Message.objects.filter(session_id=session_id, role="user")
              if m.content[0]["type"] == "text"]  # the others carry tool results
    assert len(posted) == 1


@pytest.mark.slow
def test_a_503_from_a_commit_whose_reply_was_lost_is_answered_on_retry(
        alice, make_session, worker_then_proxy):
    pg_proxy = worker_then_proxy
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


@pytest.mark.slow
def test_a_post_without_a_key_answers_what_it_stored_when_the_database_goes_after_commit(
        alice, make_session, worker_then_proxy):
    pg_proxy = worker_then_proxy
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


def _retried(port: int, path: str, key: str, api_key: str,
             body: bytes) -> tuple[int, Any, bool]:
    """The request again, with its key, until its first is done (meanwhile the key is in use):
    the answer's status, body, and whether it was replayed."""
    deadline = time.monotonic() + 30
    while True:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("POST", path, body, {"Authorization": f"Bearer {api_key}",
                                          "Content-Type": "application/json",
                                          "Idempotency-Key": key})
        retry = conn.getresponse()
        answer = json.loads(retry.read() or b"null")
        replayed = retry.getheader("Idempotent-Replayed") == "true"
        conn.close()
        if retry.status != 409 or answer["error"]["code"] != "idempotency_key_in_progress":
            return retry.status, answer, replayed
        assert time.monotonic() < deadline, "the key stayed in use"
        time.sleep(0.1)


@pytest.mark.slow
def test_a_post_whose_client_hung_up_is_answered_on_retry(alice, make_session, broker,
                                                          start_worker, tmp_path):
    _worker(start_worker)
    web = GunicornProcess(tmp_path, database_url=workers.test_database_url(),
                          env={"CELERY_BROKER_URL": broker})
    try:
        session = make_session(alice)
        path, key = f"/v1/sessions/{session['id']}/messages", str(uuid.uuid4())
        body = json.dumps({"content": "hi"}).encode()
        _post_and_hang_up(web.port, path, key, alice.key, body)
        status, answer, replayed = _retried(web.port, path, key, alice.key, body)
        assert status == 202 and replayed, answer
        _ran_once(session["id"], answer["run"]["id"])
    finally:
        web.stop()


@pytest.fixture
def walk_ids(alice, make_agent, broker) -> dict[str, str]:
    """Objects of ``alice``'s for the keyed POSTs' paths, made through the API, their tasks
    sent to a broker nobody reads: a run stays queued, a delivery unsent, while the walk goes."""
    agent = make_agent(alice)["id"]
    ids = _fresh_run(alice, {"agent_id": agent})
    run = Run.objects.get(pk=ids["run_id"])
    webhook = alice.client.post("/v1/webhooks", {"url": "https://hooks.example.com/w"},
                                format="json")
    schedule = alice.client.post("/v1/schedules", {"name": "n", "agent": agent,
                                                   "cron": "0 9 * * *", "content": "hi"},
                                 format="json")
    suite = alice.client.post("/v1/eval-suites", {"name": "walked"}, format="json").json()
    alice.client.post(f"/v1/eval-suites/{suite['id']}/cases", {"name": "c", "turns": ["hi"]},
                      format="json")
    return {**ids, "session_id": str(run.session_id), "webhook_id": webhook.json()["id"],
            "schedule_id": schedule.json()["id"], "suite_id": suite["id"]}


def test_each_post_whose_commit_reply_was_lost_answers_its_first_answer_on_retry(
        request, walk_ids, pg_proxy):
    """Every keyed POST, its COMMIT's reply lost: a 503, yet done; the retry answers what was
    done (the answer kept with it) and does nothing more."""
    for operation in WALKED:
        caller, url, body = _prepared(request, operation, walk_ids)
        key, before = str(uuid.uuid4()), _effects()
        pg_proxy.arm("lose_reply")
        lost = caller.client.post(url, body, format="json", HTTP_IDEMPOTENCY_KEY=key)
        error_of(lost, 503, "database_unavailable")
        done = _effects()
        assert done != before, operation  # committed all the same
        retry = caller.client.post(url, body, format="json", HTTP_IDEMPOTENCY_KEY=key)
        assert 200 <= retry.status_code < 300, (operation, retry.content)
        assert retry["Idempotent-Replayed"] == "true", operation
        assert _effects() == done, operation
    assert pg_proxy.faults_done == len(WALKED)


@pytest.mark.slow
def test_each_post_whose_client_hung_up_answers_its_first_answer_on_retry(
        request, walk_ids, broker, transactional_db, tmp_path):
    """Every keyed POST to a real gunicorn, the client gone before the answer: the retry
    answers what the first request did, once."""
    web = GunicornProcess(tmp_path, database_url=workers.test_database_url(),
                          env={"CELERY_BROKER_URL": broker})
    try:
        for operation in WALKED:
            caller, url, body = _prepared(request, operation, walk_ids)
            key = str(uuid.uuid4())
            raw = json.dumps(body).encode() if body is not None else b""
            _post_and_hang_up(web.port, url, key, caller.key, raw)
            status, answer, replayed = _retried(web.port, url, key, caller.key, raw)
            assert 200 <= status < 300 and replayed, (operation, status, answer)
            done = _effects()
            assert _retried(web.port, url, key, caller.key, raw) == (status, answer, True)
            assert _effects() == done, operation
    finally:
        web.stop()
