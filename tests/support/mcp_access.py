"""The MCP seams of a run without a database, for harness tests: servers reached over their
real transports (:class:`LocalAccess`), and a journal kept in memory (:class:`MemoryJournal`)."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from harness.mcp.access import CachedListing, CredentialMissing, ServerUse
from harness.mcp.client import Connection, McpTool, Target, connect

# The PyPI reference server, installed beside the interpreter running the tests.
TIME_SERVER = Target(transport="stdio",
                     command=str(Path(sys.executable).parent / "mcp-server-time"),
                     args=("--local-timezone", "UTC"), timeout_seconds=20)
NOWHERE = Target(transport="streamable_http", url="http://127.0.0.1:9/mcp", timeout_seconds=3)


class Counted:
    """A real session that counts the calls it sends (so a test can prove one was not), and
    says in ``log`` when it closes."""

    def __init__(self, connection: Connection, sent: list[str], log: list[str]) -> None:
        self.connection, self._sent, self._log = connection, sent, log
        self.target = connection.target

    @property
    def open(self) -> bool:
        return self.connection.open

    def list_tools(self) -> tuple[McpTool, ...]:
        return self.connection.list_tools()

    def call_tool(self, name, arguments, **kwargs):  # type: ignore[no-untyped-def]
        self._sent.append(name)
        return self.connection.call_tool(name, arguments, **kwargs)

    def close(self) -> None:
        self._log.append("close")
        self.connection.close()


@dataclass
class LocalAccess:
    """``McpAccess`` over ``targets`` (by server id); ``missing`` names servers whose
    credential is not set; ``cache`` is the tenant's cached listing by server id; ``log`` says
    in order when the run gave back what it holds (``idle``) and when a session closed."""

    targets: dict[str, Target]
    uses: tuple[ServerUse, ...]
    missing: set[str] = field(default_factory=set)
    cache: dict[str, CachedListing] = field(default_factory=dict)
    max_result_chars: int = 1_000_000
    connects: list[str] = field(default_factory=list)
    sent: list[str] = field(default_factory=list)
    log: list[str] = field(default_factory=list)

    @property
    def servers(self) -> tuple[ServerUse, ...]:
        return self.uses

    def ready(self, server: ServerUse) -> None:
        if server.id in self.missing:
            raise CredentialMissing(server.name, "token")

    def connect(self, server: ServerUse) -> Connection:
        self.ready(server)
        self.connects.append(server.id)
        return Counted(connect(self.targets[server.id]), self.sent,  # type: ignore[return-value]
                       self.log)

    def cached(self, server: ServerUse) -> CachedListing:
        return self.cache.get(server.id, CachedListing())

    def listed(self, server: ServerUse, tools: tuple[McpTool, ...]) -> None:
        self.cache[server.id] = CachedListing(tools=tools, listed_at=1.0)

    def idle(self) -> None:
        self.log.append("idle")


@dataclass
class MemoryJournal:
    """``CallJournal`` in memory: ``before`` are the keys an earlier claim recorded."""

    before: frozenset[str] = frozenset()
    records: list[tuple[str, str, str]] = field(default_factory=list)

    def sent_before(self) -> frozenset[str]:
        return self.before

    def record(self, key: str, *, tool_use_id: str, tool: str) -> None:
        self.records.append((tool_use_id, tool, key))
