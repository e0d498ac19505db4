"""What uses an MCP server: the apps above this one that name servers (the agents'
``config.mcp_servers``) register how to find and drop their references, so renaming a server
can refuse while its tools' names are in use and deleting one can detach it, without this app
importing theirs (they sit above it: ``pyproject.toml``'s layers).

A registrar is called inside the service's transaction: what it reads and writes commits or
rolls back with the rename or the deletion.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from integrations.models import McpServer


@dataclass(frozen=True)
class Referrer:
    name: str
    users: Callable[[McpServer], list[str]]  # what uses the server, each named for a message
    detach: Callable[[McpServer], None]  # take the server out of each (its deletion)


_referrers: list[Referrer] = []


def register(name: str, users: Callable[[McpServer], list[str]],
             detach: Callable[[McpServer], None]) -> None:
    """Add a referrer (once per name: an app's ``ready`` may run more than once)."""
    if all(r.name != name for r in _referrers):
        _referrers.append(Referrer(name, users, detach))


def users(server: McpServer) -> list[str]:
    """Everything that uses the server, each named ("agent 'support'")."""
    return [user for referrer in _referrers for user in referrer.users(server)]


def detach(server: McpServer) -> None:
    for referrer in _referrers:
        referrer.detach(server)
