"""The API's own OpenAPI schema, generated in-process, and its operations as requests a test can
send: tests that walk every route read the routes from here, so a new route is walked too."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from drf_spectacular.generators import SchemaGenerator


@functools.cache
def api_schema() -> dict[str, Any]:
    """The schema ``GET /v1/schema`` serves (generated once per test process)."""
    return SchemaGenerator().get_schema(request=None, public=True)


def resolved(node: Any, schema: Mapping[str, Any] | None = None) -> Any:
    """``node`` with every ``$ref`` replaced by what it points to."""
    schema = schema or api_schema()
    if isinstance(node, dict):
        if "$ref" in node:
            target: Any = schema
            for part in node["$ref"].removeprefix("#/").split("/"):
                target = target[part]
            return resolved(target, schema)
        return {key: resolved(value, schema) for key, value in node.items()}
    if isinstance(node, list):
        return [resolved(item, schema) for item in node]
    return node


@dataclass(frozen=True)
class Operation:
    method: str
    path: str  # the template: /v1/agents/{agent_id}
    operation_id: str
    body: dict[str, Any] | None  # the JSON request body's schema, resolved; None without one
    spec: dict[str, Any]  # the operation object as the schema has it (not resolved)

    def url(self, ids: Mapping[str, str]) -> str:
        """The path with its parameters filled from ``ids`` (``{"agent_id": …, "path": …}``)."""
        return self.path.format(**ids)

    def response(self, code: str, media_type: str = "application/json") -> dict[str, Any] | None:
        """The resolved schema of one documented response, or None."""
        content = self.spec["responses"].get(code, {}).get("content", {})
        return resolved(content[media_type]["schema"]) if media_type in content else None

    def __str__(self) -> str:
        return f"{self.method.upper()} {self.path}"


def operations() -> list[Operation]:
    found = []
    for path, methods in api_schema()["paths"].items():
        for method, operation in methods.items():
            content = operation.get("requestBody", {}).get("content", {})
            body = content.get("application/json", {}).get("schema")
            found.append(Operation(method, path, operation["operationId"],
                                   resolved(body) if body is not None else None, operation))
    return found


def body_operations() -> list[Operation]:
    """Every operation that reads a JSON body."""
    return [op for op in operations() if op.body is not None]
