"""``/v1/mcp-servers``: thin views over the integrations services."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.authentication import caller
from hango_api.pagination import CursorPage
from hango_api.views import ListApi, paginated, validated
from integrations import services
from integrations.serializers import McpServerInput, McpServerOutput

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
