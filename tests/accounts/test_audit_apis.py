"""The audit log read side: no secret in any detail, who may read it (members get 403: their
role may not), filters, read-only."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.models import AuditAction, AuditEntry
from accounts.services import api_key_issue, api_key_revoke
from runs.models import Message, Run
from tests.support.api import HITL, WRITE_METHODS, error_of, post_message, walk

# -- no secret or message text in any detail --------------------------------------------------


def test_no_detail_holds_key_material_or_message_text(owner, alice, make_agent, make_session,
                                                      inline_runs):
    issued = api_key_issue(member=alice.member, name="scan", actor=owner.member)
    api_key_revoke(api_key=issued.api_key, actor=owner.member)
    secrets = [alice.key, alice.key.split("_", 2)[2], owner.key, owner.key.split("_", 2)[2],
               issued.plaintext, issued.plaintext.split("_", 2)[2], issued.api_key.secret_hash]
    texts = ["count zebraquartz words", "platypusnebula", "marmaladecomet", "quokkasaturn",
             "PROMPT-aardvarkion", "INSTR-wombatzen", "MEMORY-ocelotium", "MEMORY-lynxorama"]
    agent = make_agent(alice, system_prompt=texts[4],
                       config={"interrupt_on": {"word_count": HITL}})
    alice.client.patch(f"/v1/agents/{agent['id']}", {"system_prompt": texts[4] + "2"},
                       format="json")
    alice.client.post("/v1/skills", {"name": "scan", "description": "d",
                                     "instructions": texts[5]}, format="json")
    alice.client.post(f"/v1/agents/{agent['id']}/memory",
                      {"path": "/memories/m.md", "content": texts[6]}, format="json")
    alice.client.put(f"/v1/agents/{agent['id']}/memory/memories/m.md", {"content": texts[7]},
                     format="json")
    session = make_session(alice, agent_id=agent["id"])
    decisions = [{"type": "respond", "message": texts[1]}, {"type": "reject",
                 "message": texts[2]}, {"type": "edit", "input": {"text": texts[3]}}]
    for decision in decisions:
        response = post_message(alice, session["id"], texts[0])
        assert response.status_code == 202, response.content
        run = response.json()["run"]
        assert run["status"] == "awaiting_approval", run
        [pending] = run["pending_approvals"]
        response = alice.client.post(f"/v1/runs/{run['id']}/approve", {"decisions": [
            {"tool_use_id": pending["tool_use_id"], **decision}]}, format="json")
        assert response.status_code == 202, response.content
        assert Run.objects.get(pk=run["id"]).status == "completed"
    # The needles are real: the conversation holds the message and the decisions' messages (an
    # edited input only reaches the tool, which counts its words).
    history = json.dumps(list(Message.objects.values_list("content", flat=True)))
    assert [t for t in texts[:3] if t not in history] == []
    rows = list(AuditEntry.objects.all())
    actions = {r.action for r in rows}
    assert {AuditAction.API_KEY_CREATE, AuditAction.API_KEY_REVOKE, AuditAction.RUN_CREATE,
            AuditAction.RUN_APPROVE, AuditAction.MEMORY_WRITE, AuditAction.SKILL_CREATE,
            AuditAction.AGENT_UPDATE} <= actions
    dump = json.dumps([r.detail for r in rows]) + " ".join(
        f"{r.object_type} {r.object_id}" for r in rows)
    for needle in [*secrets, *texts, "zebraquartz"]:
        assert needle not in dump, needle
    # The API answer carries the same details.
    listed, _ = walk(owner.client, "/v1/audit?limit=50")
    body = json.dumps(listed)
    for needle in [*secrets, *texts]:
        assert needle not in body, needle


# -- reading the log ---------------------------------------------------------------------------


def test_members_cannot_read_the_audit_log(alice):
    error_of(alice.client.get("/v1/audit"), 403, "permission_denied")
    error_of(alice.client.get("/v1/audit?action=nonsense&since=never"), 403, "permission_denied")


def test_anonymous_callers_are_not_authenticated(anon):
    error_of(anon.get("/v1/audit"), 401)


@pytest.mark.parametrize("who", ["owner", "admin"])
def test_owners_and_admins_read_their_tenant_newest_first(request, who, alice, outsider,
                                                         make_agent):
    caller = request.getfixturevalue(who)
    mine = [make_agent(alice, name=f"a{i}")["id"] for i in range(3)]
    theirs = make_agent(outsider)["id"]
    rows, pages = walk(caller.client, "/v1/audit?limit=2")
    assert pages > 1
    assert [r["object_id"] for r in rows if r["action"] == "agent.create"] == mine[::-1]
    assert theirs not in {r["object_id"] for r in rows}
    assert all(set(r) == {"id", "action", "actor", "object_type", "object_id", "detail",
                          "created_at"} for r in rows)
    stamps = [r["created_at"] for r in rows]
    assert stamps == sorted(stamps, reverse=True)
    assert {r["actor"] for r in rows if r["action"] == "agent.create"} == {str(alice.member.pk)}
    # The other tenant's owner sees their own row and nothing of ours.
    others, _ = walk(outsider.client, "/v1/audit")
    assert {r["object_id"] for r in others if r["action"] == "agent.create"} == {theirs}
    assert not set(mine) & {r["object_id"] for r in others}


def test_filters(owner, alice, make_agent, make_session):
    agent = make_agent(alice)
    make_session(alice, agent_id=agent["id"])
    rows, _ = walk(owner.client, "/v1/audit?action=session.create")
    assert [r["action"] for r in rows] == ["session.create"]
    rows, _ = walk(owner.client, "/v1/audit?object_type=agent")
    assert [r["object_id"] for r in rows] == [agent["id"]]
    future = (timezone.now() + timedelta(hours=1)).isoformat()
    assert walk(owner.client, f"/v1/audit?since={future}")[0] == []
    past = (timezone.now() - timedelta(hours=1)).isoformat()
    assert len(walk(owner.client, f"/v1/audit?since={past}")[0]) == AuditEntry.objects.count()
    error_of(owner.client.get("/v1/audit?action=agent.explode"), 400, "invalid_query")
    error_of(owner.client.get("/v1/audit?since=yesterday"), 400, "invalid_query")


@pytest.mark.parametrize("since", ["2026-01-01T00:00:00%2B16:00", "2026-01-01T00:00:00-20:00",
                                   "2026-01-01T00:00:00%2B01:00:00.5"])
def test_an_offset_the_database_cannot_store_is_400(owner, since):
    error_of(owner.client.get(f"/v1/audit?since={since}"), 400, "invalid_query")


def test_since_reads_a_date_and_an_unencoded_plus(owner, make_agent):
    make_agent(owner)
    assert len(walk(owner.client, "/v1/audit?since=2000-01-01")[0]) == AuditEntry.objects.count()
    assert walk(owner.client, "/v1/audit?since=2999-01-01T00:00:00 15:00")[0] == []


@pytest.mark.parametrize("method", WRITE_METHODS)
def test_no_route_changes_or_deletes_a_row(owner, method):
    row = AuditEntry.objects.first()
    assert row is not None
    before = AuditEntry.objects.values().get(pk=row.pk)
    for url in ("/v1/audit", f"/v1/audit/{row.pk}"):
        response = getattr(owner.client, method)(url, {"detail": {}}, format="json")
        assert response.status_code in (404, 405), response.content
    error_of(getattr(owner.client, method)("/v1/audit", {}, format="json"), 405,
             "method_not_allowed")
    assert AuditEntry.objects.values().get(pk=row.pk) == before


def test_the_admin_shows_rows_read_only(owner, admin_client):
    row = AuditEntry.objects.first()
    assert admin_client.get("/admin/accounts/auditentry/").status_code == 200
    page = admin_client.get(f"/admin/accounts/auditentry/{row.pk}/change/")
    assert page.status_code == 200 and b"api_key.create" in page.content
    assert admin_client.post(f"/admin/accounts/auditentry/{row.pk}/delete/",
                             {"post": "yes"}).status_code == 403
    assert AuditEntry.objects.filter(pk=row.pk).exists()


def test_the_action_set_is_closed_and_reserves_the_inspector():
    assert {"context.override", "context.try"} <= set(AuditAction.values)
    assert {"mcp_server.create", "mcp_server.update", "mcp_server.delete", "credential.set",
            "credential.delete"} <= set(AuditAction.values)
    assert {"run.tool_results", "session.update"} <= set(AuditAction.values)
    assert {"eval_suite.create", "eval_suite.update", "eval_suite.delete", "eval_run.start",
            "eval_run.cancel"} <= set(AuditAction.values)
    assert len(AuditAction.values) == 42
