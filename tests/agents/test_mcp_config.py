"""An agent's config.mcp_servers as the API checks it against the tenant's servers and their
latest listings (a real MCP server on loopback), and the MCP tool names allowed_tools,
interrupt_on and skills may use."""

from __future__ import annotations

import pytest

from integrations.models import McpListing
from tests.support.api import AGENT_BODY
from tests.support.mcp_runs import add_server, set_credential

pytestmark = pytest.mark.slow  # the in-repo MCP server, a process of its own


@pytest.fixture
def shop(admin, mcp_server, hango_settings):
    """The tenant's server `shop` (the test server, its token a tenant credential)."""
    hango_settings(mcp_allow_private=True)
    set_credential(admin, "shop-token")
    return add_server(admin, "shop", mcp_server)


def create(caller, **fields):
    return caller.client.post("/v1/agents", {**AGENT_BODY, **fields}, format="json")


def config_errors(response) -> list[str]:
    assert response.status_code == 422, response.content
    return response.json()["error"]["detail"]["config"]


def test_a_server_must_be_the_tenant_s(alice, outsider, shop):
    missing = create(alice, config={"mcp_servers": [
        {"server": "00000000-0000-4000-8000-000000000000"}]})
    assert config_errors(missing) == [
        "mcp_servers/0/server: there is no MCP server with id "
        "00000000-0000-4000-8000-000000000000."]
    theirs = create(outsider, config={"mcp_servers": [{"server": shop["id"]}]})
    assert config_errors(theirs) == [
        f"mcp_servers/0/server: there is no MCP server with id {shop['id']}."]
    upper = create(alice, config={"mcp_servers": [{"server": shop["id"].upper()}]})
    assert upper.status_code == 201, upper.content
    assert upper.json()["config"]["mcp_servers"] == [{"server": shop["id"]}]


def test_the_tools_an_agent_names_are_ones_its_server_lists(alice, shop):
    assert not McpListing.objects.exists()
    wrong = create(alice, config={"mcp_servers": [{"server": shop["id"],
                                                   "tools": ["lookup_order", "lookup"]}]})
    [problem] = config_errors(wrong)
    assert problem.startswith("mcp_servers/0/tools/1: the server 'shop' lists no tool "
                              "'lookup' (it lists ")
    assert "lookup_order" in problem  # listed on the spot
    right = create(alice, config={"mcp_servers": [{"server": shop["id"],
                                                   "tools": ["lookup_order", "refund"]}]})
    assert right.status_code == 201, right.content
    assert McpListing.objects.get().listed_at is not None  # kept with the agent


def test_allowed_tools_and_interrupt_on_name_mcp_tools_by_their_run_names(alice, shop):
    use = {"mcp_servers": [{"server": shop["id"], "tools": ["lookup_order", "refund"]}],
           "interrupt_on": {"shop__refund": ["approve", "reject"]}}
    made = create(alice, allowed_tools=["shop__lookup_order", "shop__refund", "write_todos"],
                  config=use)
    assert made.status_code == 201, made.content
    # A tool the agent's filter leaves out is not one its runs can offer.
    left_out = create(alice, allowed_tools=["shop__echo"], config=use)
    assert left_out.status_code == 422
    assert "Unknown tool 'shop__echo'" in left_out.json()["error"]["detail"]["allowed_tools"][0]
    # Changing allowed_tools alone is checked against the stored config's servers.
    agent_id = made.json()["id"]
    patched = alice.client.patch(f"/v1/agents/{agent_id}", {"allowed_tools": ["shop__nope"]},
                                 format="json")
    assert patched.status_code == 422, patched.content


def test_a_server_that_cannot_be_listed_cannot_vouch_for_a_tool(alice, shop, mcp_server):
    mcp_server.stop()
    response = create(alice, config={"mcp_servers": [{"server": shop["id"],
                                                      "tools": ["lookup_order"]}]})
    [problem] = config_errors(response)
    assert problem.startswith("mcp_servers/0/tools/0: the server 'shop' cannot say whether it "
                              "has 'lookup_order': it could not be listed")
    # Without a filter to check, the agent may use the server (its runs list it themselves).
    assert create(alice, config={"mcp_servers": [{"server": shop["id"]}]}).status_code == 201


def test_a_skill_may_name_the_tools_the_tenant_s_servers_listed(alice, admin, shop):
    listed = admin.client.get(f"/v1/mcp-servers/{shop['id']}/tools?refresh=true")
    assert listed.status_code == 200, listed.content
    made = alice.client.post("/v1/skills", {"name": "refunds", "description": "d",
                                            "allowed_tools": ["shop__refund"]}, format="json")
    assert made.status_code == 201, made.content
    wrong = alice.client.post("/v1/skills", {"name": "other", "description": "d",
                                             "allowed_tools": ["shop__refun"]}, format="json")
    assert wrong.status_code == 422
    assert "did you mean 'shop__refund'?" in wrong.json()["error"]["detail"]["allowed_tools"][0]


def test_a_subagent_cannot_be_given_an_mcp_tool(alice, shop):
    response = create(alice, config={
        "mcp_servers": [{"server": shop["id"]}],
        "subagents": [{"name": "helper", "description": "d", "system_prompt": "p",
                       "tools": ["shop__refund"]}]})
    [problem] = config_errors(response)
    assert problem.startswith("subagents/0/tools/0: Unknown tool 'shop__refund'")


def test_a_client_tool_may_not_take_the_name_of_an_mcp_tool_of_the_agent(alice, shop):
    lookup = {"name": "shop__lookup_order", "description": "Mine.",
              "input_schema": {"type": "object"}}
    clash = create(alice, config={"mcp_servers": [{"server": shop["id"]}],
                                  "client_tools": [lookup]})
    assert config_errors(clash) == [
        "client_tools/0/name: 'shop__lookup_order' is already the name of a tool of an MCP "
        "server of the agent; give the client tool another name."]
    # Without the server, the name is the client tool's own.
    alone = create(alice, config={"client_tools": [lookup]})
    assert alone.status_code == 201, alone.content
