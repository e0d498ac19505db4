"""``hango mcp``: the tenant's MCP servers added, named by name or id, changed and removed
from the command line; what the API refuses shown as its error; the tools a real MCP server
(the in-repo test server, requiring its bearer token) lists, read through ``hango mcp tools``."""

from __future__ import annotations

import pytest

from tests.support.cli import ok_json
from tests.support.mcp_servers import McpServerProcess, time_server

DOCS = ("mcp", "add", "docs", "--url", "https://docs.example.com/mcp",
        "--header", "Authorization: Bearer {{credential:docs-token}}", "--header", "X-Team:support",
        "--timeout", "12.5", "--allow", "search", "--allow", "read", "--deny", "delete",
        "--required", "--description", "The team's docs.")


def test_a_server_added_shown_changed_and_removed_by_name(hango, api):
    made = ok_json(hango("--json", *DOCS))
    stored = api.get(f"/v1/mcp-servers/{made['id']}").json()
    assert stored == made
    assert (stored["transport"], stored["url"], stored["timeout_seconds"]) == (
        "streamable_http", "https://docs.example.com/mcp", 12.5)
    assert stored["headers"] == {"Authorization": "Bearer {{credential:docs-token}}",
                                 "X-Team": "support"}
    assert (stored["tools_allow"], stored["tools_deny"], stored["required"],
            stored["idempotent"]) == (["search", "read"], ["delete"], True, False)

    listed = hango("mcp", "list")
    assert listed.exit_code == 0, listed.stderr
    assert "only search, read but delete" in listed.stdout
    assert "Authorization, X-Team" in listed.stdout  # the header names only
    for ref in ("docs", made["id"]):
        shown = hango("mcp", "show", ref)
        assert shown.exit_code == 0, shown.stderr
        assert made["id"] in shown.stdout and "The team's docs." in shown.stdout

    changed = ok_json(hango("--json", "mcp", "update", "docs", "--name", "kb", "--allow-all",
                            "--no-deny", "--not-required", "--idempotent", "--header", "X-A: b"))
    assert changed["id"] == made["id"]
    stored = api.get(f"/v1/mcp-servers/{made['id']}").json()
    assert (stored["name"], stored["tools_allow"], stored["tools_deny"], stored["required"],
            stored["idempotent"], stored["headers"]) == ("kb", None, [], False, True, {"X-A": "b"})
    assert stored["description"] == "The team's docs."  # an option left out is left alone

    gone = hango("mcp", "show", "docs")  # renamed
    assert gone.exit_code == 1 and "no MCP server named 'docs'" in gone.stderr
    removed = hango("mcp", "remove", "kb")
    assert removed.exit_code == 0 and "Removed MCP server kb." in removed.stdout
    assert api.get(f"/v1/mcp-servers/{made['id']}").status_code == 404
    assert "No MCP servers." in hango("mcp", "list").stdout
    by_id = hango("mcp", "show", made["id"])
    assert by_id.exit_code == 1 and "error 404" in by_id.stderr and made["id"] in by_id.stderr


def test_what_the_command_or_the_api_refuses_is_shown(hango, api):
    bare = hango("mcp", "add", "docs", "--url", "https://docs.example.com/mcp",
                 "--header", "Bearer s3cret-literal")
    assert bare.exit_code == 2 and "'Name: value'" in bare.stderr
    assert "s3cret-literal" not in bare.output  # what was typed may be a secret
    literal = hango("mcp", "add", "docs", "--url", "https://docs.example.com/mcp",
                    "--header", "Authorization: Bearer s3cret-literal")
    assert literal.exit_code == 1 and "error 422" in literal.stderr
    assert "Authorization carries a secret" in literal.stderr
    assert "{{credential:<name>}}" in literal.stderr
    private = hango("mcp", "add", "docs", "--url", "http://127.0.0.1:9/mcp")
    assert private.exit_code == 1 and "url:" in private.stderr
    assert api.get("/v1/mcp-servers").json()["results"] == []

    ok_json(hango("--json", *DOCS))
    taken = hango("mcp", "add", "docs", "--url", "https://other.example.com/mcp")
    assert taken.exit_code == 1 and "error 409 conflict" in taken.stderr
    nothing = hango("mcp", "update", "docs")
    assert nothing.exit_code == 2 and "Nothing to change" in nothing.stderr
    both = hango("mcp", "update", "docs", "--allow", "x", "--allow-all")
    assert both.exit_code == 2 and "contradict" in both.stderr
    for command in ("show", "update", "remove", "tools"):
        extra = ("--required",) if command == "update" else ()
        unknown = hango("mcp", command, "nope", *extra)
        assert unknown.exit_code == 1, (command, unknown.output)
        assert "the tenant has no MCP server named 'nope'" in unknown.stderr
        assert "hango mcp list" in unknown.stderr


def test_a_member_reads_the_servers_but_cannot_write_them(hango, api, member_key):
    made = ok_json(hango("--json", *DOCS))
    as_member = {"HANGO_API_KEY": member_key}
    listed = hango("mcp", "list", env=as_member)
    assert listed.exit_code == 0 and "docs" in listed.stdout
    for args in (("add", "mine", "--url", "https://mine.example.com/mcp"),
                 ("update", "docs", "--description", "mine now"), ("remove", "docs")):
        refused = hango("mcp", *args, env=as_member)
        assert refused.exit_code == 1, (args, refused.output)
        assert "error 403 permission_denied" in refused.stderr
        assert "owners and admins" in refused.stderr
    assert api.get(f"/v1/mcp-servers/{made['id']}").json() == made
    assert [s["name"] for s in api.get("/v1/mcp-servers").json()["results"]] == ["docs"]


def test_a_stdio_server_is_named_by_its_command(hango, api, hango_settings):
    hango_settings(mcp_stdio_servers={"time": {"command": time_server().command}})
    made = ok_json(hango("--json", "mcp", "add", "time", "--command", "time"))
    assert (made["transport"], made["command"], made["url"]) == ("stdio", "time", "")
    assert "stdio: time" in hango("mcp", "list").stdout
    unknown = hango("mcp", "add", "date", "--command", "date")
    assert unknown.exit_code == 1 and "command:" in unknown.stderr and "time" in unknown.stderr


@pytest.mark.slow
def test_the_tools_a_real_server_lists(hango, api, hango_settings,
                                       mcp_server: McpServerProcess):
    hango_settings(mcp_allow_private=True)  # the test server is on the loopback
    token_set = hango("credentials", "set", "shop-token", input=f"{mcp_server.token}\n")
    assert token_set.exit_code == 0, token_set.output
    ok_json(hango("--json", "mcp", "add", "shop", "--url", mcp_server.url, "--timeout", "10",
                  "--header", "Authorization: Bearer {{credential:shop-token}}",
                  "--deny", "refund"))

    never = hango("mcp", "tools", "shop")
    assert never.exit_code == 0, never.stderr
    assert "never listed: pass --refresh" in never.stdout
    assert mcp_server.journal()["refused"] == 0 and mcp_server.calls() == []  # not called

    listed = hango("mcp", "tools", "shop", "--refresh")
    assert listed.exit_code == 0, listed.stderr
    assert "shop__lookup_order" in listed.stdout and "lookup_order" in listed.stdout
    refund = next(line for line in listed.stdout.splitlines() if "shop__refund" in line)
    assert "no (filtered out)" in refund
    listing = ok_json(hango("--json", "mcp", "tools", "shop"))
    assert (listing["status"], listing["credential_scope"]) == ("ok", "tenant")
    names = {t["mcp_name"]: t["allowed"] for t in listing["tools"]}
    assert names["echo"] is True and names["refund"] is False
    assert mcp_server.journal()["refused"] == 0  # the token went as the credential holds it
    assert mcp_server.token not in listed.output + never.output + token_set.output
