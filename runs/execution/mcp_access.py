"""A run's MCP servers over the integrations app: the ``McpAccess`` the harness's MCP middleware
uses (:mod:`harness.mcp.access`), bound to the run's tenant and member.

The agent's ``config.mcp_servers`` joined with the tenant's servers (one query a claim; a
server deleted since is not the agent's any more), each one's filters joined; sessions made with
the member's credentials (:func:`integrations.targets.target_for`), no database connection
held while a server answers; the listing cache kept fresh by what the run listed, written only
when it changed or aged: many runs of one agent start at once and list the same tools.
"""

from __future__ import annotations

import logging
import time
import uuid
from functools import cached_property
from typing import TYPE_CHECKING

from accounts.models import Member
from hango_project.config import hango
from hango_project.pgpool import release
from harness.agent import McpServerUse
from harness.mcp.access import CachedListing, ServerUse
from harness.mcp.values import McpTool, digest
from integrations import listings, targets
from integrations.models import McpServer

if TYPE_CHECKING:  # the SDK loads where a run connects
    from harness.mcp.client import Connection, Target

log = logging.getLogger(__name__)

# A listing this process kept for a server and member with the same digest less than this long
# ago is not kept again.
FRESH_SECONDS = 60.0
_kept: dict[tuple[str, uuid.UUID], tuple[str, float]] = {}


def server_uses(tenant_id: uuid.UUID, uses: tuple[McpServerUse, ...],
                ) -> list[tuple[ServerUse, McpServer]]:
    """The agent's servers that are the tenant's, in its config's order, with their rows."""
    rows = {str(s.pk): s for s in McpServer.objects.filter(
        tenant_id=tenant_id, pk__in=[u.server for u in uses])}
    found = []
    for use in uses:
        row = rows.get(str(uuid.UUID(use.server)))
        if row is not None:
            found.append((ServerUse(
                id=str(row.pk), name=row.name, required=row.required, idempotent=row.idempotent,
                allow=None if row.tools_allow is None else frozenset(row.tools_allow),
                deny=frozenset(row.tools_deny),
                agent_tools=None if use.tools is None else frozenset(use.tools)), row))
    return found


class DbMcpAccess:
    """The MCP servers of the runs of ``uses`` (an agent's config) in ``member_id``'s
    sessions."""

    def __init__(self, *, tenant_id: uuid.UUID, member_id: uuid.UUID,
                 uses: tuple[McpServerUse, ...]) -> None:
        self.member_id = member_id
        found = server_uses(tenant_id, uses)
        self._servers = tuple(use for use, _ in found)
        self._rows = {use.id: row for use, row in found}

    @property
    def servers(self) -> tuple[ServerUse, ...]:
        return self._servers

    @cached_property
    def max_result_chars(self) -> int:
        return hango().mcp_max_result_chars

    @cached_property
    def _member(self) -> Member:
        return Member.objects.get(pk=self.member_id)

    def ready(self, server: ServerUse) -> None:
        self._target(server)

    def connect(self, server: ServerUse) -> Connection:
        from harness.mcp.client import connect  # the SDK, once a run connects

        target = self._target(server)
        release()  # no connection held while the server answers
        return connect(target)

    def _target(self, server: ServerUse) -> Target:
        return targets.target_for(self._rows[server.id], self._member)

    def cached(self, server: ServerUse) -> CachedListing:
        listing = listings.listing_get(self._rows[server.id], self._member)
        return CachedListing(
            tools=listing.tools, error=listing.error,
            listed_at=None if listing.listed_at is None else listing.listed_at.timestamp(),
            attempted_at=(None if listing.attempted_at is None
                          else listing.attempted_at.timestamp()))

    def listed(self, server: ServerUse, tools: tuple[McpTool, ...]) -> None:
        key, printed, now = (server.id, self.member_id), digest(tools), time.monotonic()
        seen = _kept.get(key)
        if seen is not None and seen[0] == printed and now - seen[1] < FRESH_SECONDS:
            return
        try:
            listings.listing_keep(self._rows[server.id], self._member, tools)
        except Exception:  # noqa: BLE001 (the cache is advisory: the run has its own list)
            log.warning("keeping the listing of MCP server %s failed", server.name,
                        exc_info=True)
            return
        _kept[key] = (printed, now)

    def idle(self) -> None:
        release()
