"""``/v1/mcp-servers``: a tenant's MCP servers, read by every member, written by owners and
admins, held to the SSRF rule and to the operator's stdio entries, audited without secrets."""

from __future__ import annotations

import uuid

import pytest

from accounts.models import AuditAction, AuditEntry
from agents.models import Agent
from integrations.models import McpListing, McpServer
from tests.support.api import error_of

HTTP = {"name": "docs", "transport": "streamable_http", "url": "https://docs.example.com/mcp"}
ENTRY = {"command": "mcp-server-time", "args": ["--local-timezone", "UTC"]}


def test_an_admin_adds_a_server_and_every_member_reads_it(admin, alice, bob):
    body = {**HTTP, "description": "The team's docs.", "timeout_seconds": 12.5,
            "headers": {"Authorization": "Bearer {{credential:docs-token}}",
                        "X-Team": "support"},
            "tools_allow": ["search", "read"], "tools_deny": ["delete"], "required": True}
    created = admin.client.post("/v1/mcp-servers", body, format="json")
    assert created.status_code == 201, created.content
    server = created.json()
    assert server == {**body, "id": server["id"], "command": "", "idempotent": False,
                      "created_by": str(admin.member.pk), "created_at": server["created_at"],
                      "updated_at": server["updated_at"]}
    for member in (alice, bob):
        assert member.client.get(f"/v1/mcp-servers/{server['id']}").json() == server
        assert member.client.get("/v1/mcp-servers").json()["results"] == [server]


def test_defaults_and_a_change(owner, hango_settings):
    hango_settings(mcp_timeout_seconds=45)
    server = owner.client.post("/v1/mcp-servers", HTTP, format="json").json()
    assert (server["timeout_seconds"], server["headers"], server["tools_allow"],
            server["tools_deny"], server["required"], server["idempotent"]) == (
        45, {}, None, [], False, False)
    changed = owner.client.patch(f"/v1/mcp-servers/{server['id']}",
                                 {"name": "kb", "idempotent": True, "tools_allow": None},
                                 format="json")
    assert changed.status_code == 200, changed.content
    assert (changed.json()["name"], changed.json()["idempotent"]) == ("kb", True)
    assert McpServer.objects.get(pk=server["id"]).name == "kb"


def test_a_member_may_read_but_not_write(alice, server):
    url = f"/v1/mcp-servers/{server['id']}"
    for response in (alice.client.post("/v1/mcp-servers", {**HTTP, "name": "mine"},
                                       format="json"),
                     alice.client.patch(url, {"description": "mine now"}, format="json"),
                     alice.client.delete(url)):
        assert "owners and admins" in error_of(response, 403, "permission_denied")["message"]
    assert McpServer.objects.get(pk=server["id"]).description == ""
    assert not McpServer.objects.filter(name="mine").exists()


def test_another_tenants_server_is_the_missing_404(outsider, server):
    url = f"/v1/mcp-servers/{server['id']}"
    missing = f"/v1/mcp-servers/{uuid.uuid4()}"
    for method, body in (("get", None), ("patch", {"description": "x"}), ("delete", None)):
        theirs = getattr(outsider.client, method)(url, body, format="json")
        none = getattr(outsider.client, method)(missing, body, format="json")
        error_of(theirs, 404, "not_found")
        assert theirs.content == none.content
    assert outsider.client.get(f"{url}/tools").content == outsider.client.get(
        f"{missing}/tools").content
    assert outsider.client.get("/v1/mcp-servers").json()["results"] == []


@pytest.mark.parametrize(("body", "field", "words"), [
    ({"name": "Docs"}, "name", "lowercase letter"),
    ({"name": "my_docs"}, "name", "lowercase letter"),
    ({"name": "a" * 31}, "name", "no more than 30"),
    ({"transport": "websocket"}, "transport", "not a valid choice"),
    ({"url": "ftp://docs.example.com/"}, "url", "http:// or https://"),
    ({"url": "https://me:pw@docs.example.com/"}, "url", "Credentials do not belong"),
    ({"url": "http://127.0.0.1:9000/mcp"}, "url", "HANGO_MCP_ALLOW_PRIVATE"),
    ({"url": "http://[::1]/mcp"}, "url", "non-public"),
    ({"url": ""}, "url", "needs a URL"),
    ({"command": "time"}, "command", "Only a stdio server"),
    ({"timeout_seconds": 0.5}, "timeout_seconds", "1 to 600"),
    ({"timeout_seconds": 601}, "timeout_seconds", "1 to 600"),
    ({"timeout_seconds": "30"}, "timeout_seconds", "a number"),
    ({"tools_allow": ["x" * 129]}, "tools_allow", "no more than 128"),
    ({"headers": {"Authorization": "Bearer abc123"}}, "headers", "put it in a credential"),
    ({"headers": {"X-Api-Key": "abc123"}}, "headers", "put it in a credential"),
    ({"headers": {"Cookie": "session=1"}}, "headers", "put it in a credential"),
    ({"headers": {"Bad Name": "x"}}, "headers", "HTTP token"),
    ({"headers": {"Host": "internal"}}, "headers", "hango sets Host itself"),
    ({"headers": {"X-A": "a\r\nX-B: b"}}, "headers", "control characters"),
    ({"headers": {"X-A": "{{credential:Bad Name}}"}}, "headers", "a credential's name"),
    ({"headers": {"X-A": "{{secret:x}}"}}, "headers", "double braces"),
    ({"headers": {"X-A": "x" * 4097}}, "headers", "no more than 4096"),
    ({"headers": {"X-A": 5}}, "headers", "a string"),
    ({"nmae": "typo"}, "nmae", "Unknown field"),
    ({"id": str(uuid.uuid4())}, "id", "Unknown field"),
])
def test_what_cannot_be_a_server_is_422_naming_the_field(admin, body, field, words):
    response = admin.client.post("/v1/mcp-servers", {**HTTP, **body}, format="json")
    detail = error_of(response, 422, "validation_error")["detail"]
    assert words in str(detail[field]), detail
    assert not McpServer.objects.exists()


def test_a_private_address_is_allowed_by_the_operators_switch(admin, hango_settings):
    hango_settings(mcp_allow_private=True)
    response = admin.client.post("/v1/mcp-servers", {**HTTP, "url": "http://127.0.0.1:9/mcp"},
                                 format="json")
    assert response.status_code == 201, response.content


def test_stdio_names_an_operator_entry_never_a_program(admin, hango_settings):
    stdio = {"name": "time", "transport": "stdio", "command": "time"}
    none = admin.client.post("/v1/mcp-servers", stdio, format="json")
    assert "configured no stdio server" in str(error_of(none, 422)["detail"]["command"])
    hango_settings(mcp_stdio_servers={"time": ENTRY, "weather": ENTRY})
    program = admin.client.post("/v1/mcp-servers", {**stdio, "command": "/bin/sh"},
                                format="json")
    assert "the configured ones: time, weather" in str(error_of(program, 422)["detail"])
    for extra in ({"url": "https://x.example.com/"}, {"headers": {"X-A": "b"}}):
        error_of(admin.client.post("/v1/mcp-servers", {**stdio, **extra}, format="json"), 422)
    made = admin.client.post("/v1/mcp-servers", stdio, format="json")
    assert made.status_code == 201, made.content
    assert (made.json()["command"], made.json()["url"]) == ("time", "")
    # Changing its transport to HTTP needs a URL, and the command goes.
    switched = admin.client.patch(f"/v1/mcp-servers/{made.json()['id']}", {
        "transport": "sse", "url": "https://sse.example.com/sse"}, format="json")
    assert "Only a stdio server" in str(error_of(switched, 422)["detail"]["command"])


def test_a_name_is_the_tenants_once(admin, owner, outsider, server):
    taken = owner.client.post("/v1/mcp-servers", {**HTTP, "name": server["name"]},
                              format="json")
    assert error_of(taken, 409, "conflict")["detail"] == {
        "name": [f"The tenant has an MCP server named {server['name']!r}."]}
    other = admin.client.post("/v1/mcp-servers", {**HTTP}, format="json").json()
    renamed = admin.client.patch(f"/v1/mcp-servers/{other['id']}", {"name": server["name"]},
                                 format="json")
    error_of(renamed, 409, "conflict")
    theirs = outsider.client.post("/v1/mcp-servers", {**HTTP, "name": server["name"]},
                                  format="json")
    assert theirs.status_code == 201  # another tenant's names are theirs


def _agent_using(caller, make_agent, server_id: str, name: str = "support") -> Agent:
    """An agent whose config names the server, as the agents' API will write it."""
    agent = Agent.objects.get(pk=make_agent(caller, name=name)["id"])
    agent.config = {"max_turns": 5, "mcp_servers": [{"server": server_id, "tools": ["x"]},
                                                    {"server": str(uuid.uuid4())}]}
    agent.save()
    return agent


def test_a_server_an_agent_uses_keeps_its_name(admin, alice, make_agent, server):
    _agent_using(alice, make_agent, server["id"])
    url = f"/v1/mcp-servers/{server['id']}"
    refused = admin.client.patch(url, {"name": "renamed"}, format="json")
    error = error_of(refused, 409, "conflict")
    assert "agent 'support'" in error["message"] and "orders__" in error["message"]
    assert McpServer.objects.get(pk=server["id"]).name == "orders"
    kept = admin.client.patch(url, {"name": "orders", "description": "Same name."},
                              format="json")
    assert kept.status_code == 200, kept.content


def test_deleting_a_server_takes_it_out_of_every_agent(admin, alice, make_agent, server):
    using = _agent_using(alice, make_agent, server["id"])
    other = _agent_using(admin, make_agent, str(uuid.uuid4()), name="other")
    before = AuditEntry.objects.count()
    assert admin.client.delete(f"/v1/mcp-servers/{server['id']}").status_code == 204
    using.refresh_from_db()
    assert [e["server"] for e in using.config["mcp_servers"]] == [
        using.config["mcp_servers"][0]["server"]]
    assert using.config["max_turns"] == 5
    assert Agent.objects.get(pk=other.pk).config == other.config
    assert not McpServer.objects.filter(pk=server["id"]).exists()
    [row] = AuditEntry.objects.order_by("-created_at")[:1]
    assert AuditEntry.objects.count() == before + 1
    assert (row.action, row.object_id) == (AuditAction.MCP_SERVER_DELETE, server["id"])


def test_the_audit_log_names_a_server_without_its_secrets(admin, server):
    url = f"/v1/mcp-servers/{server['id']}"
    admin.client.patch(url, {"url": "https://mcp.example.com/mcp?token=hunter2",
                             "headers": {"Authorization": "Token {{credential:t}}",
                                         "X-Tenant": "acme-42"}}, format="json")
    rows = AuditEntry.objects.filter(object_type="mcp_server").order_by("created_at")
    assert [r.action for r in rows] == [AuditAction.MCP_SERVER_CREATE,
                                        AuditAction.MCP_SERVER_UPDATE]
    assert rows[1].detail == {"name": "orders", "transport": "streamable_http",
                              "url": "https://mcp.example.com", "command": None,
                              "headers": ["Authorization", "X-Tenant"],
                              "changed": ["url", "headers"]}
    assert "hunter2" not in str([r.detail for r in rows]) and "acme-42" not in str(rows[1].detail)


def test_changing_how_a_server_is_reached_drops_its_listings(admin, server):
    made = McpServer.objects.get(pk=server["id"])
    McpListing.objects.create(server=made, tools=[], attempted_at=made.created_at)
    admin.client.patch(f"/v1/mcp-servers/{server['id']}", {"description": "d"}, format="json")
    assert McpListing.objects.filter(server=made).exists()
    admin.client.patch(f"/v1/mcp-servers/{server['id']}",
                       {"url": "https://other.example.com/mcp"}, format="json")
    assert not McpListing.objects.filter(server=made).exists()
