"""Agents' references to MCP servers (``config.mcp_servers: [{"server": id, …}]``), as the
integrations app asks for them when a server is renamed or deleted
(:mod:`integrations.references`; registered in :class:`agents.apps.AgentsConfig`)."""

from __future__ import annotations

from typing import Any

from agents.models import Agent
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
