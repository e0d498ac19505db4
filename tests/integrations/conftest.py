"""Fixtures of the integrations tests: a server body, and a server made by an admin."""

from __future__ import annotations

import pytest

SERVER = {"name": "orders", "transport": "streamable_http",
          "url": "https://mcp.example.com/mcp",
          "headers": {"Authorization": "Bearer {{credential:orders-token}}"}}


@pytest.fixture
def server(admin) -> dict:
    """An admin's MCP server of the tenant (over HTTP, its token a credential)."""
    response = admin.client.post("/v1/mcp-servers", SERVER, format="json")
    assert response.status_code == 201, response.content
    return response.json()
