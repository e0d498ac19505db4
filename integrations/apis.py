"""``/v1/mcp-servers`` (with each server's tools) and ``/v1/credentials``: thin views over the
integrations services."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.authentication import caller
from hango_api.pagination import CursorPage
from hango_api.views import ListApi, paginated, validated
from hango_project.errors import BadQuery, Conflict
from harness.mcp.access import CredentialMissing
from harness.mcp.names import tool_name
from integrations import credentials, services
from integrations.listings import Listing, listing_get, listing_refresh
from integrations.serializers import (
    CredentialInput,
    CredentialOutput,
    McpListingOutput,
    McpServerInput,
    McpServerOutput,
)

NOT_WRITABLE = OpenApiResponse(
    description="Only the tenant's owners and admins add, change or remove its MCP servers.")
SERVER_CONFLICT = OpenApiResponse(description=(
    "The name is taken in the tenant, or (a rename) agents use the server: its tools' names "
    "there start with it."))


class NamePage(CursorPage):
    ordering = ("name",)


class McpServerListApi(ListApi):
    pagination_class = NamePage

    @extend_schema(operation_id="mcp_servers_list", responses=McpServerOutput(many=True))
    def get(self, request):
        """The tenant's MCP servers, by name: every member sees them."""
        return paginated(self, services.server_list(member=caller(request)), McpServerOutput)

    @extend_schema(operation_id="mcp_servers_create", request=McpServerInput,
                   responses={201: McpServerOutput, 403: NOT_WRITABLE, 409: SERVER_CONFLICT})
    def post(self, request):
        """Add an MCP server (owners and admins)."""
        member = caller(request)
        data = validated(McpServerInput, request)
        services.check_writer(member)
        server = services.server_create(tenant_id=member.tenant_id, data=data, actor=member)
        return Response(McpServerOutput(server).data, status=status.HTTP_201_CREATED)


class McpServerDetailApi(APIView):
    @extend_schema(operation_id="mcp_servers_retrieve", responses=McpServerOutput)
    def get(self, request, mcp_server_id):
        server = services.server_get(member=caller(request), server_id=mcp_server_id)
        return Response(McpServerOutput(server).data)

    @extend_schema(operation_id="mcp_servers_update", request=McpServerInput,
                   responses={200: McpServerOutput, 403: NOT_WRITABLE, 409: SERVER_CONFLICT})
    def patch(self, request, mcp_server_id):
        """Change the server (owners and admins). A change of its transport, URL, command or
        headers drops its cached listings."""
        member = caller(request)
        server = services.server_get(member=member, server_id=mcp_server_id)
        data = validated(McpServerInput, request, partial=True)
        services.check_writer(member)
        server = services.server_update(server=server, data=data, actor=member)
        return Response(McpServerOutput(server).data)

    @extend_schema(operation_id="mcp_servers_destroy", responses={204: None, 403: NOT_WRITABLE})
    def delete(self, request, mcp_server_id):
        """Delete the server and take it out of every agent of the tenant (owners and
        admins)."""
        member = caller(request)
        server = services.server_get(member=member, server_id=mcp_server_id)
        services.check_writer(member)
        services.server_delete(server=server, actor=member)
        return Response(status=status.HTTP_204_NO_CONTENT)


REFRESH = OpenApiParameter(
    "refresh", bool, OpenApiParameter.QUERY,
    description="`true`: list the server's tools now, with the caller's credentials, and keep "
                "the outcome (a failure keeps the tools listed before).")
CREDENTIAL_MISSING = OpenApiResponse(description=(
    "`credential_missing`: a credential the server's headers name is not set for the caller "
    "(nor for the tenant); nothing was listed."))


class CredentialNotSet(Conflict):
    """A credential a server's headers name is not set for the caller: nothing was listed."""

    code = "credential_missing"


def _flag(request, name: str) -> bool:
    raw = request.query_params.get(name, "false")
    if raw not in ("true", "false", "1", "0"):
        raise BadQuery(f"'{name}' is true or false.", detail={name: raw})
    return raw in ("true", "1")


def listing_body(listing: Listing) -> dict[str, Any]:
    names = [tool_name(listing.server.name, t.name) for t in listing.tools]
    return {"server": listing.server.pk, "status": listing.status,
            "credential_scope": "tenant" if listing.scope is None else "member",
            "listed_at": listing.listed_at, "age_seconds": listing.age_seconds(),
            "attempted_at": listing.attempted_at, "error": listing.error,
            "tools": [{"name": name, "mcp_name": tool.name, "description": tool.description,
                       "input_schema": tool.input_schema, "allowed": listing.allows(tool.name)}
                      for name, tool in zip(names, listing.tools, strict=True)]}


class McpServerToolsApi(APIView):
    @extend_schema(operation_id="mcp_servers_tools", parameters=[REFRESH],
                   responses={200: McpListingOutput, 409: CREDENTIAL_MISSING})
    def get(self, request, mcp_server_id):
        """The server's tools as last listed for the caller's credentials (theirs where they
        set their own, else the tenant's), with the listing's age; never calls the server
        unless ``refresh=true``."""
        member = caller(request)
        server = services.server_get(member=member, server_id=mcp_server_id)
        if not _flag(request, "refresh"):
            return Response(McpListingOutput(listing_body(listing_get(server, member))).data)
        try:
            listing = listing_refresh(server, member)
        except CredentialMissing as exc:
            raise CredentialNotSet(str(exc), detail={"server": exc.server,
                                                     "credential": exc.credential}) from None
        return Response(McpListingOutput(listing_body(listing)).data)


SCOPE = OpenApiParameter(
    "scope", str, OpenApiParameter.QUERY, enum=list(credentials.SCOPES),
    description="tenant (the default): the tenant's credential, owners and admins only; "
                "member: the caller's own, which stands in for the tenant's in their runs.")
NAME = OpenApiParameter("name", str, OpenApiParameter.PATH,
                        description="`[a-z0-9][a-z0-9._-]{0,63}`, as headers name it.")
CREDENTIALS_NOT_WRITABLE = OpenApiResponse(
    description="Only the tenant's owners and admins set or remove its credentials.")


def _scope(request) -> credentials.Scope:
    raw = request.query_params.get("scope", "tenant")
    if raw == "tenant":
        return "tenant"
    if raw == "member":
        return "member"
    raise BadQuery("'scope' is tenant or member.", detail={"scope": raw})


class CredentialPage(CursorPage):
    ordering = ("name",)


class CredentialListApi(ListApi):
    pagination_class = CredentialPage

    @extend_schema(operation_id="credentials_list", responses=CredentialOutput(many=True))
    def get(self, request):
        """The tenant's credentials and the caller's own, by name: never a value."""
        rows = credentials.credential_list(member=caller(request))
        return paginated(self, rows, CredentialOutput)


class CredentialDetailApi(APIView):
    @extend_schema(operation_id="credentials_update", parameters=[NAME, SCOPE],
                   request=CredentialInput,
                   responses={200: CredentialOutput, 201: CredentialOutput,
                              403: CREDENTIALS_NOT_WRITABLE})
    def put(self, request, name):
        """Set the credential (201 when new, 200 when its value is replaced)."""
        member = caller(request)
        scope = _scope(request)
        value = validated(CredentialInput, request)["value"]
        credentials.check_writer(member, scope)
        credential, created = credentials.credential_set(
            tenant_id=member.tenant_id, owner=None if scope == "tenant" else member, name=name,
            value=value, actor=member)
        return Response(CredentialOutput(credential).data,
                        status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)

    @extend_schema(operation_id="credentials_destroy", parameters=[NAME, SCOPE],
                   responses={204: None, 403: CREDENTIALS_NOT_WRITABLE})
    def delete(self, request, name):
        member = caller(request)
        scope = _scope(request)
        credentials.check_writer(member, scope)
        credential = credentials.credential_get(member=member, name=name, scope=scope)
        credentials.credential_delete(credential=credential, actor=member)
        return Response(status=status.HTTP_204_NO_CONTENT)
