"""Client tools through the API (runs inline): a call parks the run in ``requires_action`` with
its ``required_action``; ``POST /v1/runs/{id}/tool-results`` answers some or all calls, each
once, its bad shapes a 422, its conflicts a 409 naming the calls, another tenant's run a 404; a
cancel closes the batch; an expiry answers the rest as failed; a batch mixing approval and
client calls waits for both. (On a real worker, with crashes: tests/scenarios/
test_client_tools.py.)"""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.models import AuditAction, AuditEntry
from harness.approvals import CANCELLED_BEFORE_RESULT
from harness.client_calls import NO_RESULT
from runs.intake import client_results
from runs.live.waiting import MAX_WAIT_SECONDS
from runs.models import Run, RunEvent
from tests.support.api import error_of
from tests.support.approvals import statuses, tool_result
from tests.support.history import assert_valid_history
from webhooks.models import Delivery

LOOKUP = {"name": "lookup_order", "description": "Find an order by its number.",
          "input_schema": {"type": "object", "properties": {"order": {"type": "integer"}},
                           "required": ["order"]}}
ONE = 'call lookup_order {"order": 42}'
TWO = 'call lookup_order {"order": 1} ; call lookup_order {"order": 2}'


@pytest.fixture
def client_session(alice, make_agent, make_session):
    agent = make_agent(alice, model="scripted:calls",
                       config={"client_tools": [LOOKUP], "client_tool_timeout": 60,
                               "interrupt_on": {"word_count": ["approve", "reject"]}})
    return make_session(alice, agent_id=agent["id"])


def parked(caller, session, content=ONE) -> dict:
    response = caller.client.post(f"/v1/sessions/{session['id']}/messages",
                                  {"content": content}, format="json")
    assert response.status_code == 202, response.content
    return response.json()["run"]


def submit(caller, run_id, *results):
    return caller.client.post(f"/v1/runs/{run_id}/tool-results", {"results": list(results)},
                              format="json")


def answer(call_id, output="ships today", **extra):
    return {"tool_use_id": call_id, "output": output, **extra}


def test_a_client_call_parks_the_run_asking_the_caller(alice, client_session, inline_runs,
                                                       hango_settings):
    hango_settings(webhook_allow_private=True)
    hook = alice.client.post("/v1/webhooks", {
        "url": "http://127.0.0.1:9/hook", "agent": client_session["agent"],
        "events": ["run.requires_action"]}, format="json")
    assert hook.status_code == 201, hook.content
    before = timezone.now()
    run = parked(alice, client_session)
    [told] = Delivery.objects.filter(run_id=run["id"])
    assert told.event == "run.requires_action" and told.data["status"] == "requires_action"
    assert run["status"] == "requires_action" and run["pending_approvals"] == []
    action = run["required_action"]
    assert action["type"] == "submit_tool_results"
    [call] = action["tool_calls"]
    assert call["name"] == "lookup_order" and call["input"] == {"order": 42}
    expires = Run.objects.get(pk=run["id"]).action_expires_at
    assert before + timedelta(seconds=59) < expires < timezone.now() + timedelta(seconds=61)
    assert action["expires_at"] == expires.isoformat().replace("+00:00", "Z")
    [requested] = RunEvent.objects.filter(run_id=run["id"], type="tool_results.requested")
    assert requested.data == {"tool_calls": [{"tool_use_id": call["tool_use_id"],
                                              "name": "lookup_order"}],
                              "expires_at": action["expires_at"]}
    assert statuses(run["id"]) == ["queued", "running", "requires_action"]
    # Parked is active: the session takes no other message meanwhile.
    again = alice.client.post(f"/v1/sessions/{client_session['id']}/messages",
                              {"content": "hi"}, format="json")
    assert again.status_code == 409
    listed = alice.client.get(f"/v1/sessions/{client_session['id']}/runs").json()["results"]
    assert listed[0]["required_action"] == action
    # Parked, the run is not waited out: ?wait= answers at once, where a wait that runs to its
    # end answers after MAX_WAIT_SECONDS at the earliest.
    started = time.monotonic()
    waited = alice.client.get(f"/v1/runs/{run['id']}?wait={MAX_WAIT_SECONDS}").json()
    assert waited["status"] == "requires_action"
    assert time.monotonic() - started < MAX_WAIT_SECONDS


def test_the_answer_reaches_the_model_and_the_run_completes(alice, client_session, inline_runs):
    run = parked(alice, client_session)
    call_id = run["required_action"]["tool_calls"][0]["tool_use_id"]
    response = submit(alice, run["id"], answer(call_id, [
        {"type": "text", "text": "Order 42"}, {"type": "text", "text": "ships today"}]))
    assert response.status_code == 200, response.content
    done = response.json()
    assert done["status"] == "completed" and done["required_action"] is None
    assert tool_result(client_session["id"], call_id) == {
        "type": "tool_result", "tool_use_id": call_id, "content": "Order 42\n\nships today",
        "is_error": False}
    assert "lookup_order: Order 42" in done["output"]["text"]
    [submitted] = RunEvent.objects.filter(run_id=run["id"], type="tool_results.submitted")
    assert submitted.data == {"tool_use_ids": [call_id], "remaining": 0}
    assert statuses(run["id"])[-3:] == ["queued", "running", "completed"]
    # Audited with the call and its tool, never the output.
    entry = AuditEntry.objects.get(action=AuditAction.RUN_TOOL_RESULTS)
    assert entry.detail["results"] == [{"tool_use_id": call_id, "tool": "lookup_order",
                                        "is_error": False}]
    assert "ships" not in str(entry.detail)
    assert_valid_history(client_session["id"])


def test_partial_answers_keep_the_run_parked_until_the_last(alice, client_session,
                                                            inline_runs):
    run = parked(alice, client_session, TWO)
    first, second = (c["tool_use_id"] for c in run["required_action"]["tool_calls"])
    partly = submit(alice, run["id"], answer(second, "two", is_error=True))
    assert partly.status_code == 200, partly.content
    assert partly.json()["status"] == "requires_action"
    assert [c["tool_use_id"] for c in partly.json()["required_action"]["tool_calls"]] == [first]
    # The same call again: a 409 naming it, nothing recorded.
    again = error_of(submit(alice, run["id"], answer(first, "one"), answer(second, "x")), 409)
    assert again["detail"] == {"already_answered": [second]}
    assert Run.objects.get(pk=run["id"]).status == "requires_action"
    done = submit(alice, run["id"], answer(first, "one")).json()
    assert done["status"] == "completed"
    assert tool_result(client_session["id"], second)["content"] == "two"
    assert tool_result(client_session["id"], second)["is_error"] is True
    assert [e.data["remaining"] for e in RunEvent.objects.filter(
        run_id=run["id"], type="tool_results.submitted").order_by("seq")] == [1, 0]


def test_conflicts_name_the_calls_and_a_run_not_parked_is_a_409(alice, client_session,
                                                                inline_runs):
    run = parked(alice, client_session, 'call echo {"text": "hi"} ; ' + ONE)
    [call] = run["required_action"]["tool_calls"]
    echo_id = call["tool_use_id"].rsplit("_", 1)[0] + "_0"  # the batch's first call
    error = error_of(submit(alice, run["id"], answer("nope"), answer(echo_id)), 409, "conflict")
    assert error["detail"] == {"unknown": ["nope"], "not_client_calls": [echo_id]}
    twice = error_of(submit(alice, run["id"], answer(call["tool_use_id"]),
                            answer(call["tool_use_id"])), 409)
    assert twice["detail"] == {"repeated": [call["tool_use_id"]]}
    assert submit(alice, run["id"], answer(call["tool_use_id"])).status_code == 200
    ended = error_of(submit(alice, run["id"], answer(call["tool_use_id"])), 409)
    assert ended["detail"] == {"status": "completed"}


@pytest.mark.parametrize("body", [
    {}, {"results": []}, {"results": "x"}, {"results": [{"output": "x"}]},
    {"results": [{"tool_use_id": "a"}]},
    {"results": [{"tool_use_id": "a", "output": 5}]},
    {"results": [{"tool_use_id": "a", "output": "x", "is_error": "yes"}]},
    {"results": [{"tool_use_id": "a", "output": "x", "extra": 1}]},
    {"results": [{"tool_use_id": "a", "output": [{"type": "tool_use"}]}]},
    {"results": [{"tool_use_id": "a", "output": [{"type": "text", "text": "x", "more": 1}]}]},
    {"results": [{"tool_use_id": "a", "output": [{"type": "text", "text": 3}]}]},
    {"results": [{"tool_use_id": "a", "output": [
        {"type": "image", "media_type": "image/gif", "data": "not base64!"}]}]},
    {"results": [{"tool_use_id": 7, "output": "x"}]},
])
def test_a_bad_shape_is_a_422_and_records_nothing(alice, client_session, inline_runs, body):
    run = parked(alice, client_session)
    response = alice.client.post(f"/v1/runs/{run['id']}/tool-results", body, format="json")
    error_of(response, 422, "validation_error")
    assert Run.objects.get(pk=run["id"]).status == "requires_action"


def test_another_tenant_s_run_is_a_404(alice, outsider, client_session, inline_runs):
    run = parked(alice, client_session)
    call_id = run["required_action"]["tool_calls"][0]["tool_use_id"]
    error_of(submit(outsider, run["id"], answer(call_id)), 404)
    assert Run.objects.get(pk=run["id"]).status == "requires_action"


def test_a_cancel_while_parked_answers_every_call(alice, client_session, inline_runs):
    run = parked(alice, client_session, TWO)
    first, second = (c["tool_use_id"] for c in run["required_action"]["tool_calls"])
    submit(alice, run["id"], answer(first, "one"))
    cancelled = alice.client.post(f"/v1/runs/{run['id']}/cancel").json()
    assert cancelled["status"] == "cancelled" and cancelled["required_action"] is None
    assert tool_result(client_session["id"], first)["content"] == "one"
    assert tool_result(client_session["id"], second)["content"] == CANCELLED_BEFORE_RESULT
    assert Run.objects.get(pk=run["id"]).action_expires_at is None
    assert_valid_history(client_session["id"])
    error_of(submit(alice, run["id"], answer(second)), 409)


def test_an_expired_call_is_answered_as_failed_and_the_model_reads_it(alice, client_session,
                                                                       inline_runs):
    run = parked(alice, client_session, TWO)
    first, second = (c["tool_use_id"] for c in run["required_action"]["tool_calls"])
    submit(alice, run["id"], answer(first, "one"))
    assert client_results.expire_due() == []  # not due yet
    Run.objects.filter(pk=run["id"]).update(action_expires_at=timezone.now())
    assert [str(i) for i in client_results.expire_due()] == [run["id"]]
    ended = Run.objects.get(pk=run["id"])
    assert ended.status == "completed" and ended.action_expires_at is None
    assert tool_result(client_session["id"], first)["content"] == "one"
    late = tool_result(client_session["id"], second)
    assert late["content"] == NO_RESULT and late["is_error"] is True
    [expired] = RunEvent.objects.filter(run_id=run["id"], type="tool_results.expired")
    assert expired.data == {"tool_use_ids": [second]}
    answer_text = alice.client.get(f"/v1/runs/{run['id']}").json()["output"]["text"]
    assert f"lookup_order (error): {NO_RESULT}" in answer_text
    assert client_results.expire_due() == []  # once


def test_a_timeout_of_zero_never_expires(alice, make_agent, make_session, inline_runs):
    agent = make_agent(alice, model="scripted:calls",
                       config={"client_tools": [LOOKUP], "client_tool_timeout": 0})
    run = parked(alice, make_session(alice, agent_id=agent["id"]))
    assert run["required_action"]["expires_at"] is None
    assert Run.objects.get(pk=run["id"]).action_expires_at is None


def test_a_mixed_batch_waits_for_the_human_then_the_caller(alice, client_session, inline_runs,
                                                           hango_settings):
    hango_settings(webhook_allow_private=True)
    hook = alice.client.post("/v1/webhooks", {
        "url": "http://127.0.0.1:9/hook", "agent": client_session["agent"],
        "events": ["run.requires_action"]}, format="json")
    assert hook.status_code == 201, hook.content
    run = parked(alice, client_session,
                 'call echo {"text": "a"} ; call word_count {"text": "b c"} ; ' + ONE)
    assert run["status"] == "awaiting_approval"
    [held] = run["pending_approvals"]
    [call] = run["required_action"]["tool_calls"]
    # The caller may answer first: the run still waits for the human.
    early = submit(alice, run["id"], answer(call["tool_use_id"], "found"))
    assert early.json()["status"] == "awaiting_approval", early.content
    approved = alice.client.post(f"/v1/runs/{run['id']}/approve", {"decisions": [
        {"tool_use_id": held["tool_use_id"], "type": "approve"}]}, format="json")
    assert approved.json()["status"] == "completed", approved.content
    assert tool_result(client_session["id"], call["tool_use_id"])["content"] == "found"
    assert tool_result(client_session["id"], held["tool_use_id"])["content"] == "2"
    # The other order: decided first, the run is requires_action, and the webhooks told so.
    run = parked(alice, client_session,
                 'call word_count {"text": "b c"} ; ' + ONE)
    [held] = run["pending_approvals"]
    approved = alice.client.post(f"/v1/runs/{run['id']}/approve", {"decisions": [
        {"tool_use_id": held["tool_use_id"], "type": "reject"}]}, format="json")
    assert approved.json()["status"] == "requires_action", approved.content
    assert Delivery.objects.filter(run_id=run["id"], event="run.requires_action").count() == 1
    error_of(alice.client.post(f"/v1/runs/{run['id']}/approve", {"decisions": [
        {"tool_use_id": held["tool_use_id"], "type": "approve"}]}, format="json"), 409)
    [call] = approved.json()["required_action"]["tool_calls"]
    assert submit(alice, run["id"], answer(call["tool_use_id"])).json()["status"] == "completed"
    assert statuses(run["id"])[2:] == ["awaiting_approval", "requires_action", "queued",
                                       "running", "completed"]


def test_results_sent_twice_with_one_key_are_stored_once(alice, client_session, inline_runs):
    run = parked(alice, client_session)
    call_id = run["required_action"]["tool_calls"][0]["tool_use_id"]
    url, body = f"/v1/runs/{run['id']}/tool-results", {"results": [answer(call_id)]}
    first = alice.client.post(url, body, format="json", HTTP_IDEMPOTENCY_KEY="results-1")
    assert first.status_code == 200, first.content
    again = alice.client.post(url, body, format="json", HTTP_IDEMPOTENCY_KEY="results-1")
    assert (again.status_code, again.json()) == (200, first.json())
    assert again.headers["Idempotent-Replayed"] == "true"
    assert RunEvent.objects.filter(run_id=run["id"], type="tool_results.submitted").count() == 1
    # Without the key the retry is what it is: the run has gone on.
    assert error_of(submit(alice, run["id"], answer(call_id)), 409)["detail"] == {
        "status": "completed"}
