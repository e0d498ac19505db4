"""What a tenant sets up around its agents: webhooks, MCP servers and the credentials their
headers name, skills, and who the caller is (and the audit log)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from hango_client._endpoint import OMIT, C, Omit, Ref, Resource, endpoint, items
from hango_client.types import Page

JSON = dict[str, Any]
Names = list[str]  # module-level: inside a resource class, ``list`` is its route
Scope = Literal["tenant", "member"]


class Webhooks(Resource[C]):
    @endpoint("GET", "/v1/webhooks", query=("limit",))
    def list(self, *, limit: int | None = None) -> Page[JSON]: ...
    iter = items(list)

    @endpoint("POST", "/v1/webhooks")
    def create(self, *, url: str, agent: Ref | None | Omit = OMIT, events: Names | Omit = OMIT,
               description: str | Omit = OMIT, active: bool | Omit = OMIT) -> JSON:
        """A webhook endpoint; the answer holds its signing ``secret``, shown this once."""

    @endpoint("GET", "/v1/webhooks/{webhook_id}")
    def get(self, webhook_id: Ref, /) -> JSON: ...

    @endpoint("PATCH", "/v1/webhooks/{webhook_id}")
    def update(self, webhook_id: Ref, /, *, url: str | Omit = OMIT,
               agent: Ref | None | Omit = OMIT, events: Names | Omit = OMIT,
               description: str | Omit = OMIT, active: bool | Omit = OMIT) -> JSON: ...

    @endpoint("DELETE", "/v1/webhooks/{webhook_id}")
    def delete(self, webhook_id: Ref, /) -> None: ...

    @endpoint("POST", "/v1/webhooks/{webhook_id}/rotate")
    def rotate(self, webhook_id: Ref, /) -> JSON: ...

    @endpoint("POST", "/v1/webhooks/{webhook_id}/ping")
    def ping(self, webhook_id: Ref, /) -> JSON: ...

    @endpoint("GET", "/v1/webhooks/{webhook_id}/deliveries", query=("limit",))
    def deliveries(self, webhook_id: Ref, /, *, limit: int | None = None) -> Page[JSON]: ...

    @endpoint("GET", "/v1/webhooks/{webhook_id}/deliveries/{delivery_id}")
    def delivery(self, webhook_id: Ref, delivery_id: Ref, /) -> JSON: ...


class McpServers(Resource[C]):
    @endpoint("GET", "/v1/mcp-servers", query=("limit",))
    def list(self, *, limit: int | None = None) -> Page[JSON]: ...
    iter = items(list)

    @endpoint("POST", "/v1/mcp-servers")
    def create(self, *, name: str, transport: str, url: str | Omit = OMIT,
               command: Names | Omit = OMIT, headers: Mapping[str, str] | Omit = OMIT,
               timeout_seconds: float | Omit = OMIT, tools_allow: Names | None | Omit = OMIT,
               tools_deny: Names | Omit = OMIT, required: bool | Omit = OMIT,
               idempotent: bool | Omit = OMIT, description: str | Omit = OMIT) -> JSON: ...

    @endpoint("GET", "/v1/mcp-servers/{mcp_server_id}")
    def get(self, mcp_server_id: Ref, /) -> JSON: ...

    @endpoint("PATCH", "/v1/mcp-servers/{mcp_server_id}")
    def update(self, mcp_server_id: Ref, /, *, name: str | Omit = OMIT,
               transport: str | Omit = OMIT, url: str | Omit = OMIT,
               command: Names | Omit = OMIT, headers: Mapping[str, str] | Omit = OMIT,
               timeout_seconds: float | Omit = OMIT, tools_allow: Names | None | Omit = OMIT,
               tools_deny: Names | Omit = OMIT, required: bool | Omit = OMIT,
               idempotent: bool | Omit = OMIT, description: str | Omit = OMIT) -> JSON: ...

    @endpoint("DELETE", "/v1/mcp-servers/{mcp_server_id}")
    def delete(self, mcp_server_id: Ref, /) -> None: ...

    @endpoint("GET", "/v1/mcp-servers/{mcp_server_id}/tools", query=("refresh",))
    def tools(self, mcp_server_id: Ref, /, *, refresh: bool | None = None) -> JSON: ...


class Credentials(Resource[C]):
    @endpoint("GET", "/v1/credentials", query=("limit",))
    def list(self, *, limit: int | None = None) -> Page[JSON]: ...
    iter = items(list)

    @endpoint("PUT", "/v1/credentials/{name}", query=("scope",))
    def set(self, name: str, /, *, value: str, scope: Scope | None = None) -> JSON:
        """A write-only secret (``scope``: the tenant's, the default, or the caller's own)."""

    @endpoint("DELETE", "/v1/credentials/{name}", query=("scope",))
    def delete(self, name: str, /, *, scope: Scope | None = None) -> None: ...


class Skills(Resource[C]):
    @endpoint("GET", "/v1/skills", query=("limit",))
    def list(self, *, limit: int | None = None) -> Page[JSON]: ...
    iter = items(list)

    @endpoint("POST", "/v1/skills")
    def create(self, *, name: str, description: str, instructions: str | Omit = OMIT,
               allowed_tools: Names | None | Omit = OMIT) -> JSON: ...

    @endpoint("GET", "/v1/skills/{skill_id}")
    def get(self, skill_id: Ref, /) -> JSON: ...

    @endpoint("PATCH", "/v1/skills/{skill_id}")
    def update(self, skill_id: Ref, /, *, name: str | Omit = OMIT,
               description: str | Omit = OMIT, instructions: str | Omit = OMIT,
               allowed_tools: Names | None | Omit = OMIT) -> JSON: ...

    @endpoint("DELETE", "/v1/skills/{skill_id}")
    def delete(self, skill_id: Ref, /) -> None: ...


class Account(Resource[C]):
    @endpoint("GET", "/v1/me")
    def me(self) -> JSON:
        """Who the caller is: ``{"tenant": {"id", "name"}, "member", "role", "key"}``."""

    @endpoint("GET", "/v1/audit", query=("action", "object_type", "since", "limit"))
    def audit(self, *, action: str | None = None, object_type: str | None = None,
              since: str | None = None, limit: int | None = None) -> Page[JSON]: ...
