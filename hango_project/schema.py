"""OpenAPI post-processing: the one error shape, documented on every operation it can answer."""

from __future__ import annotations

from typing import Any

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
