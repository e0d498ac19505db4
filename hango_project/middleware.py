"""Request-level guards that run before any view reads the request."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from hango_project.config import hango
from hango_project.errors import error_json


class BodySizeLimitMiddleware:
    """Answer 413 for a body larger than ``hango().max_body_bytes``.

    DRF reads JSON bodies as a stream, which bypasses Django's DATA_UPLOAD_MAX_MEMORY_SIZE, so the
    cap is applied here from Content-Length before anything is read.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        limit = hango().max_body_bytes
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return error_json(400, "malformed_request", "Content-Length is not a number.")
        if length > limit:
            return error_json(
                413,
                "payload_too_large",
                f"The request body is larger than the {limit}-byte limit.",
                {"limit_bytes": limit, "content_length": length},
            )
        return self.get_response(request)


class QueryNulMiddleware:
    """Answer 400 for a NUL in a query parameter's name or value.

    No parameter has a use for one, and PostgreSQL refuses it in any text a query compares with
    (``?object_type=a%00`` was a 500 from the query); refused here once for every route.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        for name, values in request.GET.lists():
            if "\x00" in name or any("\x00" in value for value in values):
                return error_json(400, "invalid_query",
                                  "Query parameters cannot contain NUL characters.",
                                  {"parameter": name})
        return self.get_response(request)
