"""The MCP tools a run lists at its start and keeps in its checkpoint (the private state of
:mod:`harness.middleware.mcp`), and how a listing compares with a later one."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from harness.mcp.access import McpAccess, ServerUse
from harness.mcp.values import McpTool, digest


@dataclass(frozen=True, kw_only=True)
class ListedServer:
    """What a run listed of one server: the tools it offers (its filters applied)."""

    name: str
    tools: tuple[McpTool, ...]
    digest: str
    listed_at: float | None = None  # a Unix time; None: never listed (an empty cache)

    @classmethod
    def of(cls, server: ServerUse, tools: Iterable[McpTool],
           listed_at: float | None = None) -> ListedServer:
        kept = tuple(t for t in tools if server.keeps(t.name))
        return cls(name=server.name, tools=kept, digest=digest(kept), listed_at=listed_at)


@dataclass(kw_only=True)
class Listings:
    """The run's listing by server id, and the servers it left out, with why."""

    servers: dict[str, ListedServer] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "servers": {i: {"name": s.name, "digest": s.digest, "listed_at": s.listed_at,
                            "tools": [t.to_json() for t in s.tools]}
                        for i, s in self.servers.items()},
            "skipped": dict(self.skipped),
        }

    @classmethod
    def from_json(cls, data: Any) -> Listings:
        servers = {i: ListedServer(name=s["name"], digest=s["digest"],
                                   listed_at=s.get("listed_at"),
                                   tools=tuple(McpTool.from_json(t) for t in s["tools"]))
                   for i, s in (data.get("servers") or {}).items()}
        return cls(servers=servers, skipped=dict(data.get("skipped") or {}))

    def report(self, server: ServerUse) -> ServerReport:
        """``server`` as the inspector of a started run shows it: as the run listed it."""
        listed = self.servers.get(server.id)
        if listed is None:
            return ServerReport(name=server.name, source="run", status="unreachable",
                                listed_at=None, error=self.skipped.get(server.id, ""), tools=0)
        return ServerReport(name=listed.name, source="run", status="listed",
                            listed_at=listed.listed_at, error="", tools=len(listed.tools))


def changes(before: ListedServer, after: ListedServer) -> dict[str, list[str]]:
    """The tools added, removed and changed (description or schema) from ``before`` to
    ``after``, by the server's names."""
    old = {t.name: t for t in before.tools}
    new = {t.name: t for t in after.tools}
    return {"added": sorted(set(new) - set(old)), "removed": sorted(set(old) - set(new)),
            "changed": sorted(n for n in set(old) & set(new) if old[n] != new[n])}


# Where the inspector's tools of a server came from: the run's own listing (from its
# checkpoint) or the tenant's cached one; and what is known of it.
Source = Literal["run", "cache"]
Status = Literal["listed", "unreachable", "never_listed"]


@dataclass(frozen=True, kw_only=True)
class ServerReport:
    """One server as the context inspector shows it."""

    name: str
    source: Source
    status: Status
    listed_at: float | None
    error: str
    tools: int


def from_cache(access: McpAccess, listings: Listings) -> tuple[ServerReport, ...]:
    """The inspector of a run not started: each server into ``listings`` as the tenant last
    listed it, and the report of each."""
    reports = []
    for server in access.servers:
        cached = access.cached(server)
        listed = ListedServer.of(server, cached.tools, cached.listed_at)
        listings.servers[server.id] = listed
        status: Status = ("unreachable" if cached.error
                          else "never_listed" if cached.listed_at is None else "listed")
        reports.append(ServerReport(name=server.name, source="cache", status=status,
                                    listed_at=cached.listed_at, error=cached.error,
                                    tools=len(listed.tools)))
    return tuple(reports)
