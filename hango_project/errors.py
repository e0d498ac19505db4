"""One error shape for the whole API: ``{"error": {"code", "message", "detail"}}``.

Services raise :class:`ApplicationError` subclasses; DRF's own exceptions are translated here, so
no view formats an error by hand. Status policy: 400 when the request cannot be read (malformed
JSON, bad query parameters), 422 when it was read but its content is invalid, 404 for anything
missing or not the caller's.
"""

from __future__ import annotations

import math
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404, JsonResponse
from rest_framework import exceptions, status
from rest_framework.response import Response


class ApplicationError(Exception):
    status_code: int = status.HTTP_400_BAD_REQUEST
    code = "bad_request"
    message = "The request could not be processed."

    def __init__(self, message: str | None = None, *, detail: dict[str, Any] | None = None):
        super().__init__(message or self.message)
        self.message = message or self.message
        self.detail = detail or {}


class NotFound(ApplicationError):
    status_code = status.HTTP_404_NOT_FOUND
    code = "not_found"
    message = "Not found."


class Conflict(ApplicationError):
    status_code = status.HTTP_409_CONFLICT
    code = "conflict"
    message = "The request conflicts with the current state."


class BadQuery(ApplicationError):
    status_code = status.HTTP_400_BAD_REQUEST
    code = "invalid_query"
    message = "A query parameter is invalid."


class QuotaExceeded(ApplicationError):
    status_code = status.HTTP_402_PAYMENT_REQUIRED
    code = "quota_exceeded"
    message = "The tenant's token quota for this period is spent."


class ProviderFailed(ApplicationError):
    """The model provider failed a call made for the caller (the inspector's try): an upstream
    error, not the caller's."""

    status_code = status.HTTP_502_BAD_GATEWAY
    code = "provider_error"
    message = "The model provider could not answer."


class Unprocessable(ApplicationError):
    status_code = status.HTTP_422_UNPROCESSABLE_ENTITY
    code = "validation_error"
    message = "The request is well formed but invalid."


def error_body(code: str, message: str, detail: Any = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "detail": detail or {}}}


def error_json(status_code: int, code: str, message: str, detail: Any = None) -> JsonResponse:
    """The error shape for responses made outside DRF (plain Django middleware and views)."""
    return JsonResponse(error_body(code, message, detail), status=status_code)


# DRF exception → (status, code, message). Validation errors are 422: the body parsed, its
# content did not hold (a missing field, a wrong type, an unknown id).
_DRF_ERRORS: dict[type[exceptions.APIException], tuple[int, str, str]] = {
    exceptions.ParseError: (400, "malformed_request", "The request body is not valid JSON."),
    exceptions.UnsupportedMediaType: (415, "unsupported_media_type", "Send application/json."),
    exceptions.NotAuthenticated: (401, "not_authenticated", "Send 'Authorization: Bearer <key>'."),
    exceptions.AuthenticationFailed: (401, "authentication_failed", "The API key is not valid."),
    exceptions.PermissionDenied: (403, "permission_denied", "Your role does not allow this."),
    exceptions.NotFound: (404, "not_found", "Not found."),
    exceptions.MethodNotAllowed: (405, "method_not_allowed", "Method not allowed."),
    exceptions.NotAcceptable: (406, "not_acceptable", "Cannot produce the requested format."),
    exceptions.Throttled: (429, "rate_limited", "Too many requests."),
    exceptions.ValidationError: (422, "validation_error", "The request content is invalid."),
}


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's EXCEPTION_HANDLER: every error leaves the API in the one shape."""
    # Imported here: importing rest_framework.views loads the authentication classes, and one
    # of them (accounts.authentication) raises this module's errors.
    from rest_framework.views import set_rollback

    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()

    headers: dict[str, str] = {}
    if isinstance(exc, ApplicationError):
        set_rollback()
        body = error_body(exc.code, exc.message, exc.detail)
        return Response(body, status=exc.status_code)
    if not isinstance(exc, exceptions.APIException):
        return None  # a real bug: let Django log it and answer 500

    status_code, code, message = exc.status_code, exc.default_code, str(exc.detail)
    detail: Any = {}
    for cls in type(exc).__mro__:
        if cls in _DRF_ERRORS:
            status_code, code, message = _DRF_ERRORS[cls]
            break
    if isinstance(exc, exceptions.ValidationError):
        detail = exc.detail if isinstance(exc.detail, dict) else {"non_field_errors": exc.detail}
    elif isinstance(exc, exceptions.ParseError):
        detail = {"reason": str(exc.detail)}
    elif isinstance(exc, exceptions.NotAcceptable) and exc.available_renderers:
        detail = {"formats": [renderer.format for renderer in exc.available_renderers]}
    elif isinstance(exc, (exceptions.AuthenticationFailed, exceptions.NotAuthenticated)):
        if str(exc.detail) and exc.detail != type(exc).default_detail:
            message = str(exc.detail)
    elif isinstance(exc, exceptions.Throttled):
        # Throttled sets wait in __init__; djangorestframework-stubs 3.18.1 do not declare it.
        wait: float | None = exc.wait  # type: ignore[attr-defined]
        if wait is not None:
            headers["Retry-After"] = str(max(1, math.ceil(wait)))
    # DRF's APIView sets auth_header on the exception when the authenticator names a scheme.
    auth_header: str | None = getattr(exc, "auth_header", None)
    if auth_header:
        headers["WWW-Authenticate"] = auth_header
    set_rollback()
    return Response(error_body(code, message, detail), status=status_code, headers=headers)
