"""The tools an MCP server lists, cached per server and credential scope: read without calling
the server (the API, the inspector), and listed anew on demand (``?refresh=true``, an agent
naming tools of a server never listed) or kept from what a run's first claim listed.

A listing that fails keeps the tools of the last one that worked and records why and when
(``error``, ``attempted_at``): the server is shown as unreachable with what it offered last.
The listing itself is made with no database connection held: a server may take its timeout.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from django.db import transaction
from django.utils import timezone

from accounts.models import Member
from hango_project.errors import NotFound
from hango_project.pgpool import release
from harness.mcp.values import McpTool, McpUnavailable, digest
from integrations.models import McpListing, McpServer
from integrations.targets import credential_scope, target_for

Status = Literal["ok", "unreachable", "never_listed"]
MAX_ERROR = 500


@dataclass(frozen=True, kw_only=True)
class Listing:
    """A server's cached listing for one credential scope, as the API shows it."""

    server: McpServer
    scope: uuid.UUID | None  # the member whose own credentials it was made with; None: tenant's
    tools: tuple[McpTool, ...] = ()
    listed_at: datetime | None = None  # the last listing that worked
    attempted_at: datetime | None = None  # the last attempt, whatever came of it
    error: str = ""  # why the last attempt failed; "" when it worked

    @property
    def status(self) -> Status:
        if self.attempted_at is None:
            return "never_listed"
        return "unreachable" if self.error else "ok"

    def age_seconds(self, now: datetime | None = None) -> float | None:
        """How old the tools are (None: never listed)."""
        if self.listed_at is None:
            return None
        return max(0.0, ((now or timezone.now()) - self.listed_at).total_seconds())

    def allows(self, mcp_name: str) -> bool:
        """Whether the server's allow/deny filter keeps the tool."""
        allow, deny = self.server.tools_allow, self.server.tools_deny
        return (allow is None or mcp_name in allow) and mcp_name not in deny


def _of(server: McpServer, scope: uuid.UUID | None, row: McpListing | None) -> Listing:
    if row is None:
        return Listing(server=server, scope=scope)
    return Listing(server=server, scope=scope,
                   tools=tuple(McpTool.from_json(t) for t in row.tools),
                   listed_at=row.listed_at, attempted_at=row.attempted_at, error=row.error)


def listing_get(server: McpServer, member: Member | None) -> Listing:
    """The cached listing of the member's credential scope (never the server itself)."""
    scope = credential_scope(server, member)
    return _of(server, scope, McpListing.objects.filter(server=server, scope_id=scope).first())


def listing_refresh(server: McpServer, member: Member | None) -> Listing:
    """List the server's tools now with the member's credentials and keep the outcome;
    :class:`~harness.mcp.access.CredentialMissing` (nothing stored) when one is not set,
    :class:`~hango_project.errors.NotFound` when the server was deleted meanwhile."""
    from harness.mcp.client import list_tools_once  # the SDK loads where a server is listed

    scope = credential_scope(server, member)
    try:
        target = target_for(server, member)
    except McpUnavailable as exc:  # the operator's entry is gone: the server cannot be listed
        return _stored(server, scope, None, str(exc))
    release()  # no connection held while the server answers
    try:
        tools: tuple[McpTool, ...] | None = list_tools_once(target)
        error = ""
    except McpUnavailable as exc:
        tools, error = None, str(exc)
    return _stored(server, scope, tools, error)


def listing_keep(server: McpServer, member: Member | None, tools: tuple[McpTool, ...]) -> None:
    """Keep the tools a run listed with the member's credentials: what the API and the
    inspector show next (a run's first claim lists its servers anyway)."""
    _stored(server, credential_scope(server, member), tools, "")


def _stored(server: McpServer, scope: uuid.UUID | None, tools: tuple[McpTool, ...] | None,
            error: str) -> Listing:
    """Record an attempt: its tools when it worked (``tools`` not None), else why not."""
    now = timezone.now()
    with transaction.atomic():
        if not McpServer.objects.select_for_update().filter(pk=server.pk).exists():
            raise NotFound("MCP server not found.")
        row, _ = McpListing.objects.select_for_update().get_or_create(
            server=server, scope_id=scope, defaults={"attempted_at": now})
        row.attempted_at, row.error = now, error[:MAX_ERROR]
        if tools is not None:
            row.tools, row.digest, row.listed_at = [t.to_json() for t in tools], digest(tools), now
        row.save()
    return _of(server, scope, row)
