"""Routes under /v1 owned by the integrations app."""

from django.urls import path

from integrations.apis import McpServerDetailApi, McpServerListApi

urlpatterns = [
    path("mcp-servers", McpServerListApi.as_view(), name="mcp-servers"),
    path("mcp-servers/<str:mcp_server_id>", McpServerDetailApi.as_view(), name="mcp-server"),
]
