"""Agents' references to MCP servers (``config.mcp_servers: [{"server": id, …}]``): as the
integrations app asks for them when a server is renamed or deleted
(:mod:`integrations.references`; registered in :class:`agents.apps.AgentsConfig`), and as the
API checks them — the servers the tenant's, the tools they name listed, and the names a run gives
those tools, which ``allowed_tools`` and ``interrupt_on`` may use."""

from __future__ import annotations

import uuid
from typing import Any

from accounts.models import Member
from agents import versions
from agents.models import Agent
from hango_project.errors import Unprocessable
from harness.mcp import names
from harness.mcp.access import CredentialMissing
from integrations import listings
from integrations.models import McpServer


def _uses(config: Any, server_id: str) -> bool:
    entries = config.get("mcp_servers") if isinstance(config, dict) else None
    return isinstance(entries, list) and any(
        isinstance(e, dict) and str(e.get("server")) == server_id for e in entries)


def _referring(server: McpServer, *, lock: bool) -> list[Agent]:
    agents = Agent.objects.filter(tenant_id=server.tenant_id, config__has_key="mcp_servers")
    if lock:
        agents = agents.select_for_update()
    return [a for a in agents.order_by("name") if _uses(a.config, str(server.pk))]


def users(server: McpServer) -> list[str]:
    """The agents of the tenant whose config names the server."""
    return [f"agent {agent.name!r}" for agent in _referring(server, lock=False)]


def detach(server: McpServer) -> None:
    """Take the server out of every agent of the tenant that names it (its deletion)."""
    server_id = str(server.pk)
    for agent in _referring(server, lock=True):
        kept = [e for e in agent.config["mcp_servers"]
                if not (isinstance(e, dict) and str(e.get("server")) == server_id)]
        agent.config = {**agent.config, "mcp_servers": kept}
        agent.save(update_fields=["config", "updated_at"])
        versions.record(agent, author=None)


# -- what an agent's config may name of its servers ---------------------------------------------

class ServerTools:
    """The tools of a tenant's MCP servers as the API checks names against them: each server's
    latest listing (for ``member``'s credential scope; listed now when none was ever made),
    read once per server."""

    def __init__(self, tenant_id: uuid.UUID, member: Member | None) -> None:
        self.tenant_id, self.member = tenant_id, member
        self._listings: dict[uuid.UUID, listings.Listing] = {}

    def servers(self, ids: list[str]) -> dict[str, McpServer]:
        rows = McpServer.objects.filter(tenant_id=self.tenant_id, pk__in=ids)
        return {str(row.pk): row for row in rows}

    def kept(self, server: McpServer) -> tuple[list[str], str]:
        """The names of the server's tools its own filter keeps, and why there are none to
        check against ("" when it was listed)."""
        listing = self._listings.get(server.pk)
        if listing is None:
            listing = listings.listing_get(server, self.member)
            if listing.listed_at is None:
                try:
                    listing = listings.listing_refresh(server, self.member)
                except CredentialMissing as exc:
                    return [], str(exc)
            self._listings[server.pk] = listing
        if listing.listed_at is None:
            return [], f"it could not be listed: {listing.error}"
        return [t.name for t in listing.tools if listing.allows(t.name)], ""


def checked_servers(tenant_id: uuid.UUID, config: dict[str, Any],
                    member: Member | None) -> dict[str, Any]:
    """``config`` with its ``mcp_servers`` ids in canonical form, each a server of the tenant,
    each ``tools`` name one the server lists (a 422 naming each that is not)."""
    entries = config.get("mcp_servers") or []
    if not entries:
        return config
    ids = [str(uuid.UUID(e["server"])) for e in entries]
    tools = ServerTools(tenant_id, member)
    rows = tools.servers(ids)
    problems = [f"mcp_servers/{i}/server: there is no MCP server with id {server_id}."
                for i, server_id in enumerate(ids) if server_id not in rows]
    for i, (entry, server_id) in enumerate(zip(entries, ids, strict=True)):
        if server_id not in rows or entry.get("tools") is None:
            continue
        kept, why = tools.kept(rows[server_id])
        name = rows[server_id].name
        problems += [f"mcp_servers/{i}/tools/{j}: the server {name!r} "
                     + (f"cannot say whether it has {tool!r}: {why}" if why else
                        f"lists no tool {tool!r} (it lists {', '.join(kept) or 'none'})")
                     for j, tool in enumerate(entry["tools"]) if why or tool not in kept]
    if problems:
        raise Unprocessable("The agent names MCP servers or tools it cannot use.",
                            detail={"config": problems})
    return {**config, "mcp_servers": [{**e, "server": i} for e, i in zip(entries, ids,
                                                                           strict=True)]}


def run_tool_names(tenant_id: uuid.UUID, config: Any, member: Member | None) -> frozenset[str]:
    """The names a run of an agent with ``config`` gives its MCP servers' tools
    (``<server>__<tool>``), as the servers' latest listings have them."""
    entries = (config.get("mcp_servers") if isinstance(config, dict) else None) or []
    if not entries:
        return frozenset()
    tools = ServerTools(tenant_id, member)
    rows = tools.servers([str(uuid.UUID(e["server"])) for e in entries])
    found: set[str] = set()
    for entry in entries:
        row = rows.get(str(uuid.UUID(entry["server"])))
        if row is not None:
            wanted = entry.get("tools")
            found |= {names.tool_name(row.name, t) for t in tools.kept(row)[0]
                      if wanted is None or t in wanted}
    return frozenset(found)


def tenant_tool_names(tenant_id: uuid.UUID) -> frozenset[str]:
    """The run names of every tool the tenant's servers last listed with its credentials (what
    a tenant-wide skill may name); no server is listed for it."""
    rows = McpServer.objects.filter(tenant_id=tenant_id)
    return frozenset(names.tool_name(row.name, t.name) for row in rows
                     for listing in [listings.listing_get(row, None)]
                     for t in listing.tools if listing.allows(t.name))
