"""OpenAPI (3.1): the one error shape, documented on every operation it can answer, and the
JSON Schemas the code validates with, published as they are. (Every body is a closed object:
:mod:`hango_api.inputs` says so.)"""

from __future__ import annotations

from typing import Any


def published(json_schema: dict[str, Any], description: str) -> dict[str, Any]:
    """A JSON Schema the code validates with (draft 2020-12, as :mod:`harness.agent` writes
    them) as the schema of a field: OpenAPI 3.1's schema objects are that dialect, so the route
    publishes exactly what it checks."""
    out = {key: value for key, value in json_schema.items() if key != "$schema"}
    return {**out, "description": description}


def doc_excludes() -> list[type]:
    """drf-spectacular's ``GET_LIB_DOC_EXCLUDES``: the classes whose docstrings never describe a
    component. DRF's own, as by default, and :class:`hango_api.inputs.Input`, the base of every
    body, whose docstring says how bodies are checked, not what one holds."""
    # Imported when asked: drf-spectacular reads its settings while DRF's modules load.
    from drf_spectacular.plumbing import get_lib_doc_excludes

    from hango_api.inputs import Input

    return [*get_lib_doc_excludes(), Input]


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
    "400": "The request could not be read (malformed JSON, a bad query parameter or cursor, an "
           "unreadable Content-Length).",
    "401": "Missing, invalid or revoked API key (and no login session).",
    "402": "The tenant's token quota for this period is spent.",
    "403": "The caller's role does not allow this; or a login session the API does not take: "
           "not a staff user's, a failed CSRF check, or a tenant the user is not a member of.",
    "404": "Not found, or not visible to the caller.",
    "406": "The Accept header asks for a format this route cannot produce.",
    "409": "The request conflicts with the current state (or its Idempotency-Key is in use by "
           "a request under way).",
    "411": "A chunked body the server in front of hango cannot de-chunk: send Content-Length.",
    "413": "The request body is too large.",
    "415": "The body is not application/json.",
    "422": "The request was read but its content is invalid (or its Idempotency-Key was used "
           "for another request).",
    "429": "Too many requests with this key (or login session) this minute.",
    "502": "The model provider failed.",
}

_RETRY_AFTER = {"Retry-After": {"schema": {"type": "integer"},
                                "description": "Seconds until the caller may call again."}}

# Routes that start model calls: a spent quota answers 402.
_SPENDING = ("/messages", "/resume", "/approve", "/context/try")
# An error answered to a client that accepted an event stream: one event, its data the Error.
_SSE_ERROR = {"schema": {
    "type": "object", "required": ["event", "data"],
    "description": "One `event: error` event whose data is the error shape.",
    "properties": {"event": {"const": "error"},
                   "data": {"type": "string", "contentMediaType": "application/json",
                            "contentSchema": {"$ref": "#/components/schemas/Error"}}}}}


def _error_codes(path: str, method: str, operation: dict[str, Any]) -> list[str]:
    """What an authenticated operation can answer besides its own responses: every route reads
    a key or a login session (which may be refused), a rate limit and the Accept header; a
    route with an id 404s; a write may carry a
    body (checked for size before anything else), and one that reads it checks it."""
    codes = ["400", "401", "403", "406", "429"]
    if "{" in path:
        codes.append("404")
    if method in ("post", "put", "patch"):
        codes += ["411", "413"]
        if "requestBody" in operation:
            codes += ["415", "422"]
    if method == "post" and path.endswith(_SPENDING):
        codes.append("402")
    return codes


# A time PostgreSQL can store: its UTC offset under 16 hours (hango_api.query.storable_offset).
_STORABLE_OFFSET = r"(?:Z|z|[+-](?:0\d|1[0-5]):[0-5]\d)$"


def constrain_query_parameters(result: dict[str, Any], generator, request, public,
                               ) -> dict[str, Any]:
    """drf-spectacular POSTPROCESSING_HOOK: what the server enforces on every query parameter,
    said in the schema: none may be empty or hold a NUL (``QueryParametersMiddleware``), and a
    time must have an offset PostgreSQL stores."""
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            for parameter in operation.get("parameters", ()):
                schema = parameter.get("schema", {})
                if (parameter.get("in") != "query" or schema.get("type") != "string"
                        or "enum" in schema):
                    continue
                schema.setdefault("minLength", 1)
                if schema.get("format") == "date-time":
                    schema.setdefault("pattern", _STORABLE_OFFSET)
                schema.setdefault("pattern", r"^[^\x00]*$")
    return result


# The header of accounts.idempotency (which sits above this layer): every write of an API view
# takes it but those whose view names a reason not to (``idempotency_exempt``).
IDEMPOTENCY_KEY = {
    "name": "Idempotency-Key", "in": "header", "required": False,
    "schema": {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[!-~]+$"},
    "description": "A key of yours (1 to 255 visible ASCII characters: a UUID will do) that "
                   "makes a retry safe: the first request with it is done and its answer kept "
                   "for HANGO_IDEMPOTENCY_KEY_HOURS (24 h); the same request again answers that "
                   "answer (`Idempotent-Replayed: true`) and does nothing more. Another request "
                   "with it: 422 `idempotency_key_reused`; while the first is under way: 409 "
                   "`idempotency_key_in_progress`. Only 2xx answers are kept, for the member "
                   "who sent them.",
}
_WRITES = ("post", "put", "patch", "delete")


def _keyed(generator: Any) -> set[tuple[str, str]]:
    """(path, method) of the writes that take an ``Idempotency-Key``."""
    return {(path, method.lower()) for path, _, method, view in getattr(generator, "endpoints", [])
            if method.lower() in _WRITES
            and not getattr(getattr(view, "cls", None), "idempotency_exempt", "")}


def add_error_responses(result: dict[str, Any], generator, request, public) -> dict[str, Any]:
    """drf-spectacular POSTPROCESSING_HOOK: the Error shape on every error an authenticated
    operation can answer, including those a view declares with a description only; the
    ``Idempotency-Key`` header on every write that takes one."""
    result.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR_SCHEMA
    keyed = _keyed(generator)
    for path, operations in result.get("paths", {}).items():
        for method, operation in operations.items():
            if not operation.get("security", [{}]) or path == "/healthz":
                continue
            responses = operation["responses"]
            if (path, method) in keyed:
                operation.setdefault("parameters", []).append(IDEMPOTENCY_KEY)
                for code in ("409", "422"):
                    responses.setdefault(code, {"description": _DESCRIPTIONS[code]})
            for code in _error_codes(path, method, operation):
                responses.setdefault(code, {"description": _DESCRIPTIONS[code]})
            streams = any("text/event-stream" in r.get("content", {})
                          for code, r in responses.items() if code.startswith("2"))
            for code, response in responses.items():
                if code >= "400":
                    content = response.setdefault("content", {})
                    content.setdefault("application/json",
                                       {"schema": {"$ref": "#/components/schemas/Error"}})
                    if streams:  # errors are rendered in the negotiated format
                        content.setdefault("text/event-stream", _SSE_ERROR)
            responses["429"].setdefault("headers", _RETRY_AFTER)
    return result
