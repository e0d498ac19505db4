"""OpenAPI: the one error shape, documented on every operation it can answer, and the JSON
Schemas the code validates with, published as OpenAPI 3.0 schema objects."""

from __future__ import annotations

from typing import Any


def openapi_schema(json_schema: dict[str, Any], description: str | None = None) -> dict[str, Any]:
    """A JSON Schema (draft 2020-12, as :mod:`harness.agent` writes them) as an OpenAPI 3.0
    schema object, so the schema a route validates with is the one it publishes.

    3.0 has no ``propertyNames`` (said in the description instead), a boolean
    ``exclusiveMinimum``, and ``nullable`` where 2020-12 lists ``null`` among the types."""
    out = _converted(json_schema)
    if description:
        out["description"] = f"{description} {out['description']}".strip() \
            if "description" in out else description
    return out


def _converted(node: Any) -> Any:
    if isinstance(node, list):
        return [_converted(item) for item in node]
    if not isinstance(node, dict):
        return node
    types = node.get("type")
    if isinstance(types, list) and "null" in types and len(types) == 2:
        (other,) = [t for t in types if t != "null"]
        return {**_converted({**node, "type": other}), "nullable": True}
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "$schema":
            continue
        if key == "propertyNames":
            out["description"] = f"Keys match `{value['pattern']}`."
        elif key in ("exclusiveMinimum", "exclusiveMaximum") and not isinstance(value, bool):
            out[key.replace("exclusive", "").lower()] = value
            out[key] = True
        elif key in ("properties", "patternProperties"):
            out[key] = {name: _converted(sub) for name, sub in value.items()}
        else:
            out[key] = _converted(value)
    return out

ERROR_SCHEMA = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message", "detail"],
            "properties": {
                "code": {"type": "string", "example": "not_found"},
                "message": {"type": "string"},
                "detail": {"type": "object", "additionalProperties": True},
            },
        }
    },
}

_DESCRIPTIONS = {
    "400": "The request could not be read (malformed JSON, a bad query parameter).",
    "401": "Missing, invalid or revoked API key.",
    "404": "Not found, or not visible to the caller.",
    "402": "The tenant's token quota for this period is spent.",
    "413": "The request body is too large.",
    "422": "The request was read but its content is invalid.",
}


# Routes that start model calls: a spent quota answers 402.
_SPENDING = ("/messages", "/resume", "/approve")


def add_error_responses(result: dict[str, Any], generator, request, public) -> dict[str, Any]:
    """drf-spectacular POSTPROCESSING_HOOK: add Error responses to the authenticated routes."""
    result.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR_SCHEMA
    ref = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    for path, operations in result.get("paths", {}).items():
        for method, operation in operations.items():
            if not operation.get("security", [{}]) or path == "/healthz":
                continue
            codes = ["400", "401"]
            if "{" in path:
                codes.append("404")
            if method in ("post", "put", "patch"):
                codes += ["413", "422"]
            if method == "post" and path.endswith(_SPENDING):
                codes.append("402")
            for code in codes:
                operation["responses"].setdefault(
                    code, {"description": _DESCRIPTIONS[code], "content": ref}
                )
    return result
