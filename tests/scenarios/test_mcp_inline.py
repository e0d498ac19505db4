"""An agent's MCP tools in runs executed inline (no worker): the in-repo MCP server on loopback,
the tenant's server and credential made through the API."""

from __future__ import annotations

import pytest

from runs.models import Run
from tests.support.mcp_runs import add_server, set_credential
from tests.support.mcp_servers import TOKEN

pytestmark = pytest.mark.slow


@pytest.fixture
def shop(admin, mcp_server, hango_settings):
    """The tenant's server `shop` (the test server, its token a tenant credential)."""
    hango_settings(mcp_allow_private=True)
    set_credential(admin, "shop-token")
    return add_server(admin, "shop", mcp_server)


def send(caller, make_agent, make_session, server, text, **config):
    agent = make_agent(caller, model="scripted:calls",
                       config={"mcp_servers": [{"server": server["id"]}], **config})
    session = make_session(caller, agent["id"])
    response = caller.client.post(f"/v1/sessions/{session['id']}/messages", {"content": text},
                                  format="json")
    assert response.status_code == 202, response.content
    return Run.objects.get(pk=response.json()["run"]["id"])


def test_a_run_calls_an_mcp_tool_once_with_its_idempotency_key(alice, make_agent, make_session,
                                                               shop, mcp_server, inline_runs):
    run = send(alice, make_agent, make_session, shop,
               'call shop__lookup_order {"order_id": "42"}')
    assert run.status == "completed", run.error
    [call] = mcp_server.calls("lookup_order")
    assert call["arguments"] == {"order_id": "42"}
    assert call["meta"]["io.hango/idempotency-key"] == f"{run.pk}:1:{run_call_id(run)}"
    events = [e.type for e in run.events.order_by("seq")]
    assert "mcp.tools_listed" in events
    answer = run.session.messages.order_by("-seq").first()
    assert "shop__lookup_order" in answer.content[0]["text"]


def run_call_id(run: Run) -> str:
    message = run.session.messages.filter(role="assistant").order_by("seq").first()
    return next(b["id"] for b in message.content if b["type"] == "tool_use")


def test_a_run_stopped_for_a_credential_goes_on_once_it_is_set(admin, alice, make_agent,
                                                               make_session, mcp_server,
                                                               hango_settings, inline_runs):
    hango_settings(mcp_allow_private=True)
    server = admin.client.post("/v1/mcp-servers", {
        "name": "shop", "transport": "streamable_http", "url": mcp_server.url, "required": True,
        "headers": {"Authorization": "Bearer {{credential:shop-token}}"}}, format="json").json()
    run = send(alice, make_agent, make_session, server,
               'call shop__lookup_order {"order_id": "7"}')
    assert (run.status, run.error["code"]) == ("failed", "credential_missing")
    assert "'shop'" in run.error["message"] and "'shop-token'" in run.error["message"]
    assert mcp_server.calls() == []  # stopped before any call (and any model call)

    put = alice.client.put("/v1/credentials/shop-token?scope=member", {"value": TOKEN},
                           format="json")
    assert put.status_code == 201, put.content
    run.refresh_from_db()
    assert run.status == "completed", run.error
    assert [c["arguments"] for c in mcp_server.calls("lookup_order")] == [{"order_id": "7"}]
    another = send(alice, make_agent, make_session, server, "call shop__lookup_order {}")
    assert another.status == "completed"  # a later run lists with the credential at once


def test_the_inspector_shows_the_cached_tools_never_calling_the_server(
        admin, alice, make_agent, make_session, shop, mcp_server, inline_runs):
    agent = make_agent(alice, model="scripted:calls",
                       config={"mcp_servers": [{"server": shop["id"]}]})
    session = make_session(alice, agent["id"])
    url = f"/v1/sessions/{session['id']}/context"
    never = alice.client.get(url).json()
    assert [(s["server"], s["listing"], s["status"]) for s in never["mcp_servers"]] == [
        ("shop", "cache", "never_listed")]
    assert not [p for p in never["tools"] if p["id"].startswith("tool:shop__")]

    assert admin.client.get(f"/v1/mcp-servers/{shop['id']}/tools?refresh=true").status_code == 200
    listed = alice.client.get(url).json()
    [server] = listed["mcp_servers"]
    assert (server["status"], server["error"]) == ("listed", "")
    assert server["age_seconds"] is not None and server["tools"] > 0
    refund = next(p for p in listed["tools"] if p["id"] == "tool:shop__refund")
    assert refund["included"] and refund["tokens"] > 0
    assert mcp_server.calls() == []  # listed, never called

    # An override leaves the tool out of the request, like any tool.
    put = alice.client.put(f"/v1/agents/{agent['id']}/context-overrides",
                           [{"part": "tool:shop__refund", "action": "exclude"}], format="json")
    assert put.status_code == 200, put.content
    after = alice.client.get(url).json()
    refund = next(p for p in after["tools"] if p["id"] == "tool:shop__refund")
    assert not refund["included"] and refund["override"] == "exclude"
