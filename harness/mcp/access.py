"""What a run may do with its MCP servers, and the journal of the calls it sent: the protocols
the database side implements (``runs/``), so the middleware knows nothing of Django.

:class:`ServerUse` is one server as a run uses it: its filters already joined (the server's
allow and deny lists, the agent's own list). :class:`McpAccess` connects (credentials resolved,
the address rule applied), reads the tenant's cached listing and keeps it fresh.
:class:`CallJournal` records each call to a server not marked idempotent before it is sent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from harness.errors import RunCannotGoOn
from harness.mcp import CREDENTIAL_MISSING
from harness.mcp.values import McpTool

if TYPE_CHECKING:  # the SDK loads where a run connects
    from harness.mcp.client import Connection


@dataclass(frozen=True, kw_only=True)
class ServerUse:
    """One MCP server of a run: its id and name, whether the run needs it and whether its
    calls may be repeated, and which of its tools the run offers."""

    id: str
    name: str
    required: bool = False
    idempotent: bool = False
    allow: frozenset[str] | None = None  # the server's own filter: None lets every tool pass
    deny: frozenset[str] = frozenset()
    agent_tools: frozenset[str] | None = None  # the agent's config.mcp_servers[].tools

    def keeps(self, mcp_name: str) -> bool:
        """Whether the run offers the server's tool ``mcp_name``."""
        return ((self.allow is None or mcp_name in self.allow) and mcp_name not in self.deny
                and (self.agent_tools is None or mcp_name in self.agent_tools))


@dataclass(frozen=True, kw_only=True)
class CachedListing:
    """The tenant's last listing of a server (per credential scope), as the inspector shows it:
    the tools (all of them, unfiltered), when they were listed (a Unix time; None when the
    server was never listed), and the last attempt's error ("" when it succeeded)."""

    tools: tuple[McpTool, ...] = ()
    listed_at: float | None = None
    error: str = ""
    attempted_at: float | None = field(default=None, compare=False)


class CredentialMissing(RunCannotGoOn):
    """A server's headers reference a credential that is set neither for the run's member nor
    for the tenant: the message names both; setting it lets the run go on."""

    code = CREDENTIAL_MISSING

    def __init__(self, server: str, credential: str) -> None:
        super().__init__(f"The MCP server {server!r} needs the credential {credential!r}, which "
                         "is set neither for this run's member nor for the tenant; set it "
                         "(PUT /v1/credentials/" f"{credential}) and the run goes on.")
        self.server, self.credential = server, credential


class McpAccess(Protocol):
    """A run's MCP servers, bound to its tenant and member."""

    @property
    def servers(self) -> tuple[ServerUse, ...]:
        """The servers the agent uses, in its config's order."""
        ...

    @property
    def max_result_chars(self) -> int:
        """The most text of one result a run keeps (``HANGO_MCP_MAX_RESULT_CHARS``)."""
        ...

    def ready(self, server: ServerUse) -> None:
        """Raise :class:`CredentialMissing` when a credential the server needs is not set;
        nothing is sent."""
        ...

    def connect(self, server: ServerUse) -> Connection:
        """An open session, or :class:`~harness.mcp.client.McpUnavailable` /
        :class:`CredentialMissing` saying why there is none."""
        ...

    def cached(self, server: ServerUse) -> CachedListing:
        """The tenant's last listing of ``server`` for the run's credential scope (no
        network)."""
        ...

    def listed(self, server: ServerUse, tools: tuple[McpTool, ...]) -> None:
        """Keep a fresh listing, so the inspector and the API show what a run saw."""
        ...

    def idle(self) -> None:
        """Give back what the run holds while it waits on a server (its database
        connection)."""
        ...


class CallJournal(Protocol):
    """The run's record of the MCP calls it sent, kept apart from its turns' commits."""

    def sent_before(self) -> frozenset[str]:
        """The idempotency keys of the calls recorded by the run's earlier claims."""
        ...

    def record(self, key: str, *, tool_use_id: str, tool: str) -> None:
        """Record the call as sent, before it is; :class:`~harness.errors.Superseded` when
        the run is no longer this claim's (then it is not sent)."""
        ...
