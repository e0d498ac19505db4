"""Reads and writes of a tenant's MCP servers: every member reads them, owners and admins make,
change and delete them, each write audited in its transaction.

A server's name starts its tools' names in runs (``<server>__<tool>``), so a server that an
agent uses keeps its name (409 naming the agents); deleting one takes it out of every agent of
the tenant first (:mod:`integrations.references`). Changing where or how a server is reached
drops its cached listings: they may not be its tools any more. The tool names a change of its
filter gives are checked against its latest listings (:func:`_unlisted`); a server never listed
has nothing to check them against, and its filter is taken as given.
"""

from __future__ import annotations

import uuid
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from django.db import IntegrityError, transaction
from django.db.models import Q, QuerySet
from rest_framework import status

from accounts.audit import audit_record
from accounts.models import AuditAction, Member
from accounts.scoping import get_visible, visible_to
from hango_project.config import hango
from hango_project.errors import ApplicationError, Conflict, Unprocessable
from integrations import references
from integrations.models import McpListing, McpServer
from integrations.rules import server_problems

SERVER_FIELDS = ("name", "description", "transport", "url", "command", "headers",
                 "timeout_seconds", "tools_allow", "tools_deny", "required", "idempotent")
# A change to one of these may change the tools the server lists.
REACHED_BY = ("transport", "url", "command", "headers")


class ServersNotWritable(ApplicationError):
    """Every member sees the tenant's MCP servers, so refusing a change is a 403, not a 404."""

    status_code = status.HTTP_403_FORBIDDEN
    code = "permission_denied"
    message = "Only the tenant's owners and admins may add, change or remove its MCP servers."


def server_list(*, member: Member) -> QuerySet[McpServer]:
    return visible_to(McpServer.objects.all(), member).order_by("name")


def server_get(*, member: Member, server_id: uuid.UUID | str) -> McpServer:
    return get_visible(McpServer.objects.all(), member, server_id, what="MCP server")


def check_writer(member: Member) -> None:
    if not member.sees_whole_tenant:
        raise ServersNotWritable()


def _checked(fields: dict[str, Any]) -> None:
    problems = server_problems(fields, hango())
    if problems:
        raise Unprocessable(detail=problems)


def _name_taken(name: str) -> Conflict:
    reason = f"The tenant has an MCP server named {name!r}."
    return Conflict(reason, detail={"name": [reason]})


def server_create(*, tenant_id: uuid.UUID, data: dict[str, Any],
                  actor: Member | None) -> McpServer:
    """A new server of the tenant (``data``: its fields, as the API's input gives them)."""
    fields: dict[str, Any] = {"description": "", "url": "", "command": "", "headers": {},
                              "timeout_seconds": hango().mcp_timeout_seconds,
                              "tools_allow": None, "tools_deny": [], "required": False,
                              "idempotent": False}
    fields.update({k: v for k, v in data.items() if k in SERVER_FIELDS})
    _checked(fields)
    try:
        with transaction.atomic():
            server = McpServer.objects.create(tenant_id=tenant_id, created_by=actor, **fields)
            audit_record(actor=actor, tenant=tenant_id, action=AuditAction.MCP_SERVER_CREATE,
                         obj_type="mcp_server", obj_id=server.pk, detail=described(server))
    except IntegrityError:
        if McpServer.objects.filter(tenant_id=tenant_id, name=fields["name"]).exists():
            raise _name_taken(fields["name"]) from None
        raise
    return server


def server_update(*, server: McpServer, data: dict[str, Any],
                  actor: Member | None) -> McpServer:
    """Change ``data``'s fields of the server. What changed is judged against the stored row:
    the admin's form has set its values on ``server`` already."""
    fields = {k: data.get(k, getattr(server, k)) for k in SERVER_FIELDS}
    _checked(fields)
    if not any(k in data for k in REACHED_BY) and (problems := _unlisted(server, data, actor)):
        raise Unprocessable(detail=problems)
    try:
        with transaction.atomic():
            stored = McpServer.objects.select_for_update().get(pk=server.pk)
            changed = [k for k in SERVER_FIELDS if k in data and data[k] != getattr(stored, k)]
            if "name" in changed and (used := references.users(stored)):
                raise Conflict(
                    f"The MCP server {stored.name!r} is used by {', '.join(used)}: its tools' "
                    f"names there start with {stored.name}__. Take it out of them first.",
                    detail={"name": [f"Used by {', '.join(used)}."]})
            for name in changed:
                setattr(server, name, data[name])
            server.save()
            if set(changed) & set(REACHED_BY):
                McpListing.objects.filter(server=server).delete()
            audit_record(actor=actor, tenant=server.tenant_id,
                         action=AuditAction.MCP_SERVER_UPDATE, obj_type="mcp_server",
                         obj_id=server.pk, detail={**described(server), "changed": changed})
    except IntegrityError:
        if McpServer.objects.filter(tenant_id=server.tenant_id, name=fields["name"]).exclude(
                pk=server.pk).exists():
            raise _name_taken(fields["name"]) from None
        raise
    return server


def _unlisted(server: McpServer, data: dict[str, Any],
              actor: Member | None) -> dict[str, list[str]]:
    """The names in the filter ``data`` gives that the server's latest listings (the tenant's
    credentials', and the writer's own: another member's listing is theirs to see) do not hold,
    by field; none when it was never listed."""
    if not data.get("tools_allow") and not data.get("tools_deny"):
        return {}
    listings = list(McpListing.objects.filter(
        Q(scope__isnull=True) | Q(scope=actor), server=server, listed_at__isnull=False,
    ).values_list("tools", flat=True))
    if not listings:
        return {}
    known = {t.get("name") for tools in listings for t in tools}
    problems = {}
    for field in ("tools_allow", "tools_deny"):
        unknown = [n for n in data.get(field) or () if n not in known]
        if unknown:
            problems[field] = [f"The server lists no tool named {', '.join(map(repr, unknown))} "
                               f"(its tools: {', '.join(sorted(known)) or 'none'})."]
    return problems


def server_delete(*, server: McpServer, actor: Member | None) -> None:
    """Delete the server, its listings with it, after taking it out of every agent."""
    with transaction.atomic():
        references.detach(server)
        audit_record(actor=actor, tenant=server.tenant_id, action=AuditAction.MCP_SERVER_DELETE,
                     obj_type="mcp_server", obj_id=server.pk, detail=described(server))
        server.delete()


def described(server: McpServer) -> dict[str, Any]:
    """What the audit log says of a server: its name and transport, its URL's scheme and host
    only (a token may sit in a path or query), its headers' names only (their templates are
    no secret, but the log has no need of them), the stdio entry it names."""
    parts = urlsplit(server.url)
    return {"name": server.name, "transport": server.transport,
            "url": urlunsplit((parts.scheme, parts.hostname or "", "", "", "")) or None,
            "command": server.command or None, "headers": sorted(server.headers)}
