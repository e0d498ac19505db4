"""``GET /v1/mcp-servers/{id}/tools``: a server's tools as last listed per credential scope,
listed anew with ``?refresh=true`` against real servers: the PyPI reference server over stdio
and the in-repo Streamable HTTP server on a loopback port, which checks a bearer token."""

from __future__ import annotations

import logging

import pytest

from harness.mcp.names import tool_name
from integrations.models import McpListing
from tests.support.api import error_of
from tests.support.mcp_servers import TOKEN, McpServerProcess, time_server

pytestmark = pytest.mark.slow


def tools_of(caller, server_id: str, refresh: bool = False) -> dict:
    response = caller.client.get(f"/v1/mcp-servers/{server_id}/tools"
                                 + ("?refresh=true" if refresh else ""))
    assert response.status_code == 200, response.content
    return response.json()


@pytest.fixture
def running(tmp_path):
    server = McpServerProcess(tmp_path)
    yield server
    server.stop()


@pytest.fixture
def orders(admin, running, hango_settings) -> dict:
    """An MCP server of the tenant at the test server (private addresses allowed, as a server
    on the same network needs), its token a credential."""
    hango_settings(mcp_allow_private=True)
    made = admin.client.post("/v1/mcp-servers", {
        "name": "orders", "transport": "streamable_http", "url": running.url,
        "timeout_seconds": 10, "tools_deny": ["refund"],
        "headers": {"Authorization": "Bearer {{credential:orders-token}}"}}, format="json")
    assert made.status_code == 201, made.content
    return made.json()


def test_a_server_never_listed_says_so(alice, server):
    listing = tools_of(alice, server["id"])
    assert listing == {"server": server["id"], "status": "never_listed",
                       "credential_scope": "tenant", "listed_at": None, "age_seconds": None,
                       "attempted_at": None, "error": "", "tools": []}


def test_the_reference_time_server_over_stdio(admin, alice, hango_settings):
    hango_settings(mcp_stdio_servers={"time": {"command": time_server().command}})
    server = admin.client.post("/v1/mcp-servers", {
        "name": "time", "transport": "stdio", "command": "time",
        "tools_allow": ["get_current_time", "convert_time"], "tools_deny": ["convert_time"]},
        format="json").json()
    listing = tools_of(alice, server["id"], refresh=True)  # a member may list: their creds
    assert (listing["status"], listing["error"], listing["credential_scope"]) == (
        "ok", "", "tenant")
    tools = {t["name"]: t for t in listing["tools"]}
    assert set(tools) == {"time__get_current_time", "time__convert_time"}
    now = tools["time__get_current_time"]
    assert now["mcp_name"] == "get_current_time" and now["description"]
    assert now["input_schema"]["type"] == "object" and "timezone" in str(now["input_schema"])
    assert (now["allowed"], tools["time__convert_time"]["allowed"]) == (True, False)
    cached = tools_of(admin, server["id"])  # no call: the stored listing, older now
    assert cached["tools"] == listing["tools"] and cached["listed_at"] == listing["listed_at"]
    assert cached["age_seconds"] >= 0


def test_the_credential_reaches_the_server_and_a_wrong_one_fails_saying_why(admin, alice,
                                                                           running, orders):
    admin.client.put("/v1/credentials/orders-token", {"value": TOKEN}, format="json")
    running.set_tools(add=["refund.partial"])
    listing = tools_of(admin, orders["id"], refresh=True)
    assert listing["status"] == "ok", listing
    assert running.journal()["refused"] == 0  # every request carried the token
    tools = {t["mcp_name"]: t for t in listing["tools"]}
    assert {"lookup_order", "refund", "refund.partial"} <= set(tools)
    assert tools["lookup_order"]["name"] == "orders__lookup_order"
    assert tools["refund.partial"]["name"] == tool_name("orders", "refund.partial")
    assert tools["refund.partial"]["name"].startswith("orders__refund_partial_")
    assert (tools["lookup_order"]["allowed"], tools["refund"]["allowed"]) == (True, False)
    assert TOKEN not in str(listing)

    # Alice's own credential stands in for the tenant's: hers is wrong.
    alice.client.put("/v1/credentials/orders-token?scope=member", {"value": "guess"},
                     format="json")
    hers = tools_of(alice, orders["id"], refresh=True)
    assert running.journal()["refused"] >= 1
    assert (hers["status"], hers["credential_scope"], hers["tools"]) == (
        "unreachable", "member", [])
    assert "answered 401: it refused the credentials" in hers["error"]
    assert hers["listed_at"] is None
    assert tools_of(admin, orders["id"])["status"] == "ok"  # the tenant's listing stands


def test_a_failed_listing_keeps_the_tools_listed_before(admin, orders):
    admin.client.put("/v1/credentials/orders-token", {"value": TOKEN}, format="json")
    first = tools_of(admin, orders["id"], refresh=True)
    admin.client.put("/v1/credentials/orders-token", {"value": "revoked"}, format="json")
    failed = tools_of(admin, orders["id"], refresh=True)
    assert failed["status"] == "unreachable" and failed["error"]
    assert failed["tools"] == first["tools"] and failed["listed_at"] == first["listed_at"]
    assert failed["attempted_at"] > first["attempted_at"]
    admin.client.put("/v1/credentials/orders-token", {"value": TOKEN}, format="json")
    back = tools_of(admin, orders["id"], refresh=True)
    assert (back["status"], back["error"]) == ("ok", "")
    assert McpListing.objects.filter(server_id=orders["id"]).count() == 1


def test_a_missing_credential_lists_nothing_and_names_it(alice, running, orders):
    response = alice.client.get(f"/v1/mcp-servers/{orders['id']}/tools?refresh=true")
    error = error_of(response, 409, "credential_missing")
    assert error["detail"] == {"server": "orders", "credential": "orders-token"}
    assert "'orders' needs the credential 'orders-token'" in error["message"]
    assert running.journal()["refused"] == 0 and not McpListing.objects.exists()


def test_a_name_resolving_to_loopback_is_refused_when_the_session_opens(admin, running,
                                                                       hango_settings):
    url = running.url.replace("127.0.0.1", "localhost")
    server = admin.client.post("/v1/mcp-servers", {
        "name": "sneaky", "transport": "streamable_http", "url": url}, format="json")
    assert server.status_code == 201  # a name: checked at every connection
    listing = tools_of(admin, server.json()["id"], refresh=True)
    assert listing["status"] == "unreachable"
    assert "non-public address" in listing["error"]
    assert "HANGO_MCP_ALLOW_PRIVATE" in listing["error"]
    assert running.journal()["refused"] == 0  # no request reached it
    hango_settings(mcp_allow_private=True)
    assert tools_of(admin, server.json()["id"], refresh=True)["status"] == "unreachable"
    assert running.journal()["refused"] >= 1  # now it was asked, without a token


@pytest.mark.parametrize("flag", ["yes", "TRUE", "2"])
def test_refresh_is_true_or_false(alice, server, flag):
    response = alice.client.get(f"/v1/mcp-servers/{server['id']}/tools?refresh={flag}")
    error_of(response, 400, "invalid_query")


def test_neither_the_credential_nor_the_url_is_logged(admin, running, orders, caplog):
    caplog.set_level(logging.DEBUG)
    admin.client.patch(f"/v1/mcp-servers/{orders['id']}",
                       {"url": running.url + "?key=hunter2"}, format="json")
    admin.client.put("/v1/credentials/orders-token", {"value": TOKEN}, format="json")
    assert tools_of(admin, orders["id"], refresh=True)["status"] == "ok"
    assert caplog.records  # something was logged at DEBUG
    assert TOKEN not in caplog.text and "hunter2" not in caplog.text


def test_a_filter_naming_a_tool_the_server_does_not_list_is_refused(admin, orders):
    admin.client.put("/v1/credentials/orders-token", {"value": TOKEN}, format="json")
    listed = {t["mcp_name"] for t in tools_of(admin, orders["id"], refresh=True)["tools"]}
    assert {"echo", "refund"} <= listed
    route = f"/v1/mcp-servers/{orders['id']}"
    refused = admin.client.patch(route, {"tools_allow": ["echo", "ecko"]}, format="json")
    detail = error_of(refused, 422, "validation_error")["detail"]
    assert list(detail) == ["tools_allow"] and "'ecko'" in detail["tools_allow"][0]
    assert "echo" in detail["tools_allow"][0]  # the tools it does list, to choose from
    kept = admin.client.patch(route, {"tools_allow": ["echo"], "tools_deny": ["refund"]},
                              format="json")
    assert kept.status_code == 200, kept.content
    # Where it is reached changes with the filter: nothing listed there yet to check against.
    moved = admin.client.patch(route, {"url": orders["url"] + "/", "tools_deny": ["later"]},
                               format="json")
    assert moved.status_code == 200, moved.content


def test_a_filter_is_checked_against_the_tenant_s_listing_and_the_writer_s_own(
        admin, alice, orders):
    """A member's own listing (made with their credential) is theirs: an admin's 422 does
    not tell its tools."""
    alice.client.put("/v1/credentials/orders-token?scope=member", {"value": TOKEN},
                     format="json")
    tools_of(alice, orders["id"], refresh=True)  # listed for alice only
    McpListing.objects.filter(server_id=orders["id"], scope__isnull=False).update(
        tools=[{"name": "alice_only", "description": "", "input_schema": {"type": "object"}}])
    admin.client.put("/v1/credentials/orders-token", {"value": TOKEN}, format="json")
    tools_of(admin, orders["id"], refresh=True)
    refused = admin.client.patch(f"/v1/mcp-servers/{orders['id']}",
                                 {"tools_deny": ["alice_only"]}, format="json")
    detail = error_of(refused, 422, "validation_error")["detail"]["tools_deny"][0]
    assert "'alice_only'" in detail and detail.count("alice_only") == 1
