"""Where a session to an MCP server goes, for one member: the harness's
:class:`~harness.mcp.client.Target`, its headers filled in with that member's credentials.

A header's ``{{credential:<name>}}`` is the member's own credential of that name if they set
one, else the tenant's; a name set by neither (or sealed under another ``DJANGO_SECRET_KEY``)
is :class:`~harness.mcp.access.CredentialMissing`, naming the server and the credential.
Which scope the headers resolved in keys the listing cache: a member whose own credential stood
in may see other tools than the tenant's credentials would (:mod:`integrations.listings`).

The URL's host is checked at every connection by the SSRF rule under ``HANGO_MCP_ALLOW_PRIVATE``
(:func:`hango_project.outbound.address_policy`); a stdio server runs the operator's program.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from accounts.models import Member
from hango_project import outbound
from hango_project.config import HangoSettings, hango
from harness.mcp.access import CredentialMissing
from harness.mcp.values import McpUnavailable
from integrations import credentials
from integrations.models import Credential, McpServer, Transport
from integrations.rules import SWITCH
from integrations.templates import references, render

if TYPE_CHECKING:  # the SDK loads where a session is made (harness.mcp.values)
    from harness.mcp.client import Target


class CredentialUnreadable(CredentialMissing):
    """A credential sealed under another ``DJANGO_SECRET_KEY``: as good as missing until it is
    set again."""

    def __init__(self, server: str, credential: str) -> None:
        super().__init__(server, credential)
        self.args = (f"The MCP server {server!r} needs the credential {credential!r}, which was "
                     f"{credentials.UNREADABLE} (PUT /v1/credentials/{credential}).",)


def credential_names(server: McpServer) -> list[str]:
    """The credentials the server's headers name, in order, each once."""
    return list(dict.fromkeys(ref for template in server.headers.values()
                              for ref in references(template)))


def credential_scope(server: McpServer, member: Member | None) -> uuid.UUID | None:
    """The scope of the listing the member sees: theirs when a credential the server's headers
    name is their own, else the tenant's (None)."""
    names = credential_names(server)
    if member is None or not names:
        return None
    mine = Credential.objects.filter(member=member, name__in=names).exists()
    return member.pk if mine else None


def target_for(server: McpServer, member: Member | None,
               knobs: HangoSettings | None = None) -> Target:
    """The session target of ``server`` for ``member``'s runs (None: the tenant's credentials
    only); :class:`~harness.mcp.access.CredentialMissing` when a credential it names cannot be
    had, :class:`~harness.mcp.values.McpUnavailable` when its stdio entry is gone."""
    from harness.mcp.client import Target

    knobs = knobs or hango()
    if server.transport == Transport.STDIO:
        entry = knobs.mcp_stdio_servers.get(server.command)
        if entry is None:
            raise McpUnavailable(f"the operator's stdio server {server.command!r} is no longer "
                                 "configured (HANGO_MCP_STDIO_SERVERS)")
        return Target(transport="stdio", command=entry.command, args=tuple(entry.args),
                      env=dict(entry.env), timeout_seconds=server.timeout_seconds)
    names = credential_names(server)
    found = credentials.values_for(tenant_id=server.tenant_id, member=member, names=names)
    values: dict[str, str] = {}
    for name in names:
        if name not in found:
            raise CredentialMissing(server.name, name)
        value, _ = found[name]
        if value is None:
            raise CredentialUnreadable(server.name, name)
        values[name] = value
    headers = {name: render(template, values) for name, template in server.headers.items()}
    return Target(transport="sse" if server.transport == Transport.SSE else "streamable_http",
                  url=server.url, headers=headers, timeout_seconds=server.timeout_seconds,
                  check_address=outbound.address_policy(knobs.mcp_allow_private,
                                                        switch=SWITCH))
