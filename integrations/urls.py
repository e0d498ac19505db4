"""Routes under /v1 owned by the integrations app."""

from django.urls import path

from integrations.apis import (
    CredentialDetailApi,
    CredentialListApi,
    McpServerDetailApi,
    McpServerListApi,
    McpServerToolsApi,
)

urlpatterns = [
    path("mcp-servers", McpServerListApi.as_view(), name="mcp-servers"),
    path("mcp-servers/<str:mcp_server_id>", McpServerDetailApi.as_view(), name="mcp-server"),
    path("mcp-servers/<str:mcp_server_id>/tools", McpServerToolsApi.as_view(),
         name="mcp-server-tools"),
    path("credentials", CredentialListApi.as_view(), name="credentials"),
    path("credentials/<str:name>", CredentialDetailApi.as_view(), name="credential"),
]
