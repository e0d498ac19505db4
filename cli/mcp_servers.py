"""``hango mcp``: the tenant's MCP servers, named by name or id, and the tools each lists.

A server is named the way people think of it, by its name; the API's routes take its id, so a
name is looked up in the list. A name (``[a-z][a-z0-9-]{0,29}``) is never a UUID, so an id given
as it is goes straight to its route.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import click

from cli.client import CliError, path_id
from cli.options import State, as_json, json_option, list_options, list_rows, show_record
from cli.output import Column, cell_text, clip, print_json, print_record, print_table, time_text
from cli.watch import naming

ROUTE = "/v1/mcp-servers"
TRANSPORTS = ("streamable_http", "sse", "stdio")


def _where(server: dict[str, Any]) -> str:
    return f"stdio: {server['command']}" if server["transport"] == "stdio" else server["url"]


def filter_text(server: dict[str, Any]) -> str:
    """Which of its tools runs may use, as ``tools_allow`` and ``tools_deny`` say."""
    allow, deny = server.get("tools_allow"), server.get("tools_deny") or []
    kept = "all" if allow is None else "only " + (", ".join(allow) or "none")
    return kept + (f" but {', '.join(deny)}" if deny else "")


SERVER_COLUMNS: list[Column] = [
    ("id", lambda r: r["id"]), ("name", lambda r: r["name"]),
    ("transport", lambda r: r["transport"]), ("where", _where),
    ("headers", lambda r: ", ".join(sorted(r.get("headers") or {})) or "-"),
    ("tools", filter_text), ("required", lambda r: "yes" if r["required"] else "no"),
    ("timeout (s)", lambda r: cell_text(r.get("timeout_seconds"))),
]
TOOL_COLUMNS: list[Column] = [
    ("name in runs", lambda r: r["name"]), ("MCP name", lambda r: r["mcp_name"]),
    ("allowed", lambda r: "yes" if r["allowed"] else "no (filtered out)"),
    ("description", lambda r: clip((r.get("description") or "").strip().split("\n")[0], 100)),
]


def server_path(state: State, ref: str) -> str:
    """The route of the server ``ref`` names: its id as given, or its name looked up."""
    try:
        uuid.UUID(ref)
    except ValueError:
        return f"{ROUTE}/{path_id(_id_named(state, ref))}"
    return f"{ROUTE}/{path_id(ref)}"


def _id_named(state: State, name: str) -> str:
    for page in state.client().pages(ROUTE, follow=True):
        for server in page.get("results", []):
            if server["name"] == name:
                return str(server["id"])
    raise CliError(f"error: the tenant has no MCP server named {name!r}.",
                   hint="`hango mcp list` shows its servers.")


def _headers(_ctx: click.Context, _param: click.Parameter,
             values: tuple[str, ...]) -> dict[str, str] | None:
    headers: dict[str, str] = {}
    for value in values:
        name, colon, template = value.partition(":")
        if not colon or not name.strip():
            # Not echoed: what was typed may be a secret that belongs in a credential.
            raise click.BadParameter("a header is 'Name: value' (one lacks its name or colon).")
        headers[name.strip()] = template.lstrip()
    return headers or None


def server_options(f: Callable) -> Callable:
    """The server's writable fields, as ``add`` and ``update`` take them."""
    options = [
        click.option("--description"),
        click.option("--transport", type=click.Choice(TRANSPORTS),
                     help="Default for add: stdio with --command, else streamable_http."),
        click.option("--url", help="HTTP transports: where it answers (http or https)."),
        click.option("--command", help="stdio: an entry of the operator's "
                     "HANGO_MCP_STDIO_SERVERS."),
        click.option("--header", "headers", multiple=True, callback=_headers,
                     metavar="'NAME: VALUE'",
                     help="A request header (repeat for more; on update they replace the "
                     "server's). A secret goes in a credential: "
                     "'Authorization: Bearer {{credential:NAME}}'."),
        click.option("--timeout", "timeout_seconds", type=float, metavar="SECONDS",
                     help="Per call and per listing, 1-600 (default: the server's setting)."),
        click.option("--allow", "tools_allow", multiple=True, metavar="TOOL",
                     help="Runs may use only these of its tools (MCP names; repeat)."),
        click.option("--deny", "tools_deny", multiple=True, metavar="TOOL",
                     help="Runs may not use this tool (MCP name; repeat)."),
        click.option("--required/--not-required", default=None,
                     help="A run fails when it cannot be used (else goes on without it)."),
        click.option("--idempotent/--not-idempotent", default=None,
                     help="Its calls may be sent again after a crash."),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def server_body(options: dict[str, Any]) -> dict[str, Any]:
    """The API's fields of the options given; an option left out is no field."""
    lists = ("tools_allow", "tools_deny")
    return {name: list(value) if name in lists else value
            for name, value in options.items() if value not in (None, ())}


@click.group()
def mcp() -> None:
    """MCP servers: where the tenant's agents take tools from (owners and admins write them)."""


@mcp.command("list")
@list_options
@json_option
@click.pass_obj
def mcp_list(state: State, fetch_all: bool, limit: int | None) -> None:
    """The tenant's MCP servers, by name."""
    list_rows(state, ROUTE, SERVER_COLUMNS, noun="MCP servers", fetch_all=fetch_all,
              limit=limit)


@mcp.command("show")
@click.argument("server")
@json_option
@click.pass_obj
def mcp_show(state: State, server: str) -> None:
    """One server (SERVER: its name or id), every field."""
    with naming("MCP server", server):
        show_record(state.client().get(server_path(state, server)))


@mcp.command("add")
@click.argument("name")
@server_options
@json_option
@click.pass_obj
def mcp_add(state: State, name: str, **options: Any) -> None:
    """Add the MCP server NAME and show it.

    \b
    hango mcp add docs --url https://docs.internal.example/mcp \\
        --header 'Authorization: Bearer {{credential:docs-token}}' --deny delete_page
    hango mcp add time --command time        # an operator's stdio entry
    """
    body = {"name": name, **server_body(options)}
    body.setdefault("transport", "stdio" if "command" in body and "url" not in body
                    else "streamable_http")
    show_record(state.client().post(ROUTE, body))


@mcp.command("update")
@click.argument("server")
@click.option("--name", help="A new name (refused while an agent uses the server).")
@server_options
@click.option("--allow-all", is_flag=True, help="Runs may use all its tools again.")
@click.option("--no-deny", is_flag=True, help="Deny none of its tools.")
@click.option("--no-headers", is_flag=True, help="Send no headers.")
@json_option
@click.pass_obj
def mcp_update(state: State, server: str, allow_all: bool, no_deny: bool, no_headers: bool,
               **options: Any) -> None:
    """Change the fields given of SERVER (its name or id) and show it. A change of where or
    how it is reached drops the tools listed before."""
    body = server_body(options)
    clearing: list[tuple[str, bool, str, Any]] = [
        ("--allow", allow_all, "tools_allow", None), ("--deny", no_deny, "tools_deny", []),
        ("--header", no_headers, "headers", {})]
    for option, flag, field, cleared in clearing:
        if flag and field in body:
            raise click.UsageError(f"{option} and the flag that clears it contradict each other.")
        if flag:
            body[field] = cleared
    if not body:
        raise click.UsageError("Nothing to change: give a field's option.")
    with naming("MCP server", server):
        show_record(state.client().patch(server_path(state, server), body))


@mcp.command("remove")
@click.argument("server")
@json_option
@click.pass_obj
def mcp_remove(state: State, server: str) -> None:
    """Remove SERVER (its name or id): every agent of the tenant stops using it."""
    with naming("MCP server", server):
        state.client().delete(server_path(state, server))
    if as_json():
        print_json({"server": server, "deleted": True})
    else:
        click.echo(f"Removed MCP server {server}.")


@mcp.command("tools")
@click.argument("server")
@click.option("--refresh", is_flag=True,
              help="List them now, with your credentials (else: as last listed).")
@json_option
@click.pass_obj
def mcp_tools(state: State, server: str, refresh: bool) -> None:
    """The tools SERVER (its name or id) lists, as last listed for your credentials (your
    own where you set them, else the tenant's); the server is called only with --refresh."""
    with naming("MCP server", server):
        listing = state.client().get(f"{server_path(state, server)}/tools",
                                     params={"refresh": "true"} if refresh else None)
    if as_json():
        print_json(listing)
        return
    print_listing(listing)


def print_listing(listing: dict[str, Any]) -> None:
    status = listing["status"]
    if status == "never_listed":
        status = "never listed: pass --refresh to list its tools now"
    print_record({
        "status": status,
        "credentials": "the tenant's" if listing["credential_scope"] == "tenant" else "yours",
        "listed (UTC)": time_text(listing.get("listed_at")),
        **({"error": listing["error"]} if listing.get("error") else {}),
    })
    if listing["tools"]:
        click.echo()
        print_table(listing["tools"], TOOL_COLUMNS)
