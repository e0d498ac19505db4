"""The audit log: one row per successful write route (and none for a read or a failed write),
details free of key material and message text, and ``GET /v1/audit`` for owners and admins only.

Members get 403: the authorization rule answers 404 for an object the caller may not see and 403
for what the caller's role may not do, and the audit log is a route every caller knows exists.
"""

from __future__ import annotations

import json
import re

import pytest

from accounts.models import AuditAction
from runs.models import SessionFile
from tests.support.api import WRITE_METHODS
from tests.support.audit_routes import (
    ADMIN_WRITE_ROUTES,
    CALL_ID,
    READS_WITH_A_BODY,
    SEVERAL_WRITES,
    WRITE_ROUTES,
    a_price,
    an_eval_run,
    awaiting_run,
    new_rows,
    queued_run,
    routes_by_method,
    row_ids,
)


def test_the_write_routes_listed_here_are_every_write_route_of_the_api(db):
    routes = routes_by_method()
    declared = {(name, method) for method in WRITE_METHODS for name, _ in routes.get(method, [])}
    assert declared == (set(WRITE_ROUTES) | set(ADMIN_WRITE_ROUTES) | READS_WITH_A_BODY
                        | set(SEVERAL_WRITES))


@pytest.mark.parametrize(("name", "method"), sorted(ADMIN_WRITE_ROUTES))
def test_every_admin_write_route_records_exactly_one_row(admin, alice, world, name, method):
    action, object_type, call = ADMIN_WRITE_ROUTES[(name, method)]
    url, body, object_id = call(admin, world)
    before = row_ids()
    refused = getattr(alice.client, method)(url, body, format="json")
    assert refused.status_code == 403 and new_rows(before) == []
    response = getattr(admin.client, method)(url, body, format="json")
    assert 200 <= response.status_code < 300, response.content
    [row] = new_rows(before)
    assert (row.action, row.object_type, row.object_id) == (action, object_type,
                                                            object_id(response))
    assert row.actor_id == admin.member.pk and row.tenant_id == admin.member.tenant_id


@pytest.mark.parametrize(("who"), ["alice", "admin"])
def test_firing_a_schedule_by_hand_records_each_write(request, world, who):
    caller = request.getfixturevalue(who)
    before = row_ids()
    response = caller.client.post(f"/v1/schedules/{world['schedule']}/run")
    assert response.status_code == 202, response.content
    rows = new_rows(before)
    assert [row.action for row in rows] == SEVERAL_WRITES[("schedule-run", "post")]
    assert rows[-1].actor_id == caller.member.pk and rows[-1].object_id == world["schedule"]


@pytest.mark.parametrize(("who"), ["alice", "admin"])
def test_saving_both_override_sets_records_each_set(request, world, who):
    caller = request.getfixturevalue(who)
    before = row_ids()
    response = caller.client.put(f"/v1/sessions/{world['session']}/context-overrides/both", {
        "agent": [{"part": "tool:echo", "action": "exclude"}],
        "session": [{"part": "message:1", "action": "replace", "replacement": "Say hi."}]},
        format="json")
    assert response.status_code == 200, response.content
    rows = new_rows(before)
    assert [row.action for row in rows] == SEVERAL_WRITES[
        ("session-context-overrides-both", "put")]
    assert [(row.object_type, row.object_id) for row in rows] == [
        ("agent", world["agent"]), ("session", world["session"])]
    assert {(row.actor_id, row.tenant_id) for row in rows} == {
        (caller.member.pk, caller.member.tenant_id)}


@pytest.mark.parametrize(("who"), ["alice", "admin"])
@pytest.mark.parametrize(("name", "method"), sorted(WRITE_ROUTES))
def test_every_write_route_records_exactly_one_row(request, world, who, name, method):
    caller = request.getfixturevalue(who)
    action, object_type, call = WRITE_ROUTES[(name, method)]
    url, body, object_id = call(caller, world)
    before = row_ids()
    response = getattr(caller.client, method)(url, body, format="json")
    assert 200 <= response.status_code < 300, response.content
    [row] = new_rows(before)
    assert (row.action, row.object_type, row.object_id) == (action, object_type,
                                                            object_id(response))
    assert row.actor_id == caller.member.pk and row.tenant_id == caller.member.tenant_id
    json.dumps(row.detail)  # plain JSON


def test_details_name_what_changed(alice, world):
    before = row_ids()
    alice.client.patch(f"/v1/agents/{world['agent']}",
                       {"description": "D.", "system_prompt": "secret prompt"}, format="json")
    alice.client.patch(f"/v1/skills/{world['skill']}", {"instructions": "new"}, format="json")
    run_id = awaiting_run(alice, world)
    alice.client.post(f"/v1/runs/{run_id}/approve", {"decisions": [
        {"tool_use_id": CALL_ID, "type": "respond", "message": "nine"}]}, format="json")
    agent_row, skill_row, run_row, approve_row = new_rows(before)
    assert sorted(agent_row.detail["changed"]) == ["description", "system_prompt"]
    assert skill_row.detail == {"changed": ["instructions"]}
    assert run_row.action == AuditAction.RUN_CREATE
    assert approve_row.detail == {"session": world["session"], "decisions": [
        {"tool_use_id": CALL_ID, "tool": "word_count", "type": "respond"}]}


def test_no_read_route_records_a_row(owner, alice, world):
    run_id = queued_run(alice, world)
    SessionFile.objects.create(session_id=world["session"], path="/notes/plan.md", content="x")
    ping = alice.client.post(f"/v1/webhooks/{world['webhook']}/ping").json()
    ids = {"agent_id": world["agent"], "session_id": world["session"], "run_id": run_id,
           "skill_id": world["skill"], "webhook_id": world["webhook"], "delivery_id": ping["id"],
           "schedule_id": world["schedule"], "model": a_price(owner).rsplit("/", 1)[1],
           "mcp_server_id": world["mcp_server"], "suite_id": world["suite"],
           "case_id": world["case"], "eval_run_id": (eval_run := an_eval_run(alice, world)),
           "other_id": eval_run, "number": "1", "other": "1"}
    paths = {"agent-memory-file": "memories/old.md", "session-file": "notes/plan.md"}
    before = row_ids()
    called = []
    for name, route in routes_by_method()["get"]:
        def fill(m: re.Match, name=name) -> str:
            param = m.group(1)
            return paths[name] if param == "path" else ids[param]
        url = "/" + re.sub(r"<(?:\w+:)?(\w+)>", fill, route)
        assert owner.client.get(url).status_code == 200, url
        # A member may read all of these but the owners' and admins' routes (403 by role).
        response = alice.client.get(url)
        assert response.status_code == 200 or (
            name == "audit" and response.status_code == 403), (url, response.content)
        called.append(name)
    assert "audit" in called and "run-events" in called
    previewed = alice.client.post(f"/v1/sessions/{world['session']}/context", {"overrides": [
        {"part": "tool:echo", "action": "exclude"}]}, format="json")
    assert previewed.status_code == 200, previewed.content
    assert new_rows(before) == []
