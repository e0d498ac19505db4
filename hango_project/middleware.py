"""Request-level guards that run before any view reads the request."""

from __future__ import annotations

import io
import logging
from collections.abc import Callable

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse

from hango_project.config import hango
from hango_project.errors import error_json

log = logging.getLogger(__name__)


class BodySizeLimitMiddleware:
    """Answer 413 for a body larger than ``hango().max_body_bytes``, and make a chunked body
    readable.

    DRF reads JSON bodies as a stream, which bypasses Django's DATA_UPLOAD_MAX_MEMORY_SIZE, so the
    cap is applied here from Content-Length before anything is read.

    A chunked body has no Content-Length, and Django reads only Content-Length bytes: it would see
    an empty body. gunicorn de-chunks the body and says so (``wsgi.input_terminated``, from the
    mod_wsgi convention): then the body is read here, at most one byte past the cap, and handed on
    with its length. A server that does not (runserver, wsgiref) leaves the chunked bytes
    unreadable, so the request is refused with 411 rather than read as empty.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        limit = hango().max_body_bytes
        if "chunked" in request.META.get("HTTP_TRANSFER_ENCODING", "").lower():
            refused = _read_chunked(request, limit)
            if refused is not None:
                return refused
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return error_json(400, "malformed_request", "Content-Length is not a number.")
        if length > limit:
            return _too_large(limit, {"content_length": length})
        return self.get_response(request)


def _too_large(limit: int, detail: dict[str, object]) -> HttpResponse:
    return error_json(413, "payload_too_large",
                      f"The request body is larger than the {limit}-byte limit.",
                      {"limit_bytes": limit, **detail})


def _read_chunked(request: HttpRequest, limit: int) -> HttpResponse | None:
    """Read a de-chunked body into the request (None), or the error answer."""
    if not request.META.get("wsgi.input_terminated"):
        return error_json(
            411, "length_required",
            "This server cannot read a chunked request body: send it with Content-Length.",
            {"transfer_encoding": request.META["HTTP_TRANSFER_ENCODING"]})
    body = request.META["wsgi.input"].read(limit + 1)
    if len(body) > limit:
        return _too_large(limit, {"transfer_encoding": "chunked"})
    request.META["CONTENT_LENGTH"] = str(len(body))
    # What Django's WSGIRequest reads the body from (it made it of Content-Length bytes: none).
    request._stream = io.BytesIO(body)
    return None


class QueryParametersMiddleware:
    """Answer 400 for a NUL in a query parameter's name or value, and for an API parameter sent
    empty.

    No parameter has a use for a NUL, and PostgreSQL refuses it in any text a query compares
    with (``?object_type=a%00`` was a 500 from the query). An empty value (``?since=``,
    ``?limit=``) was read as absent by some views and refused by others; the schema cannot say
    "a date-time, or empty", so under ``/v1/`` it is refused, naming the parameter, the one
    rule for every route. (The admin's pages send empty values, a blank search box: not theirs.)
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        api = request.path.startswith("/v1/")
        for name, values in request.GET.lists():
            if "\x00" in name or any("\x00" in value for value in values):
                return error_json(400, "invalid_query",
                                  "Query parameters cannot contain NUL characters.",
                                  {"parameter": name})
            if api and "" in values:
                return error_json(400, "invalid_query",
                                  f"The query parameter {name!r} is empty: give a value or "
                                  "leave it out.", {"parameter": name})
        return self.get_response(request)


class DatabaseUnavailableMiddleware:
    """Answer 503 (with ``Retry-After``) when a view could not reach the database — PostgreSQL
    restarting, or its connections exhausted — instead of a 500: nothing is wrong with the
    request, and trying again shortly will do. Only connection-level errors count; an
    integrity error or a bug is still a 500, logged."""

    RETRY_AFTER_SECONDS = 5

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exc: Exception) -> HttpResponse | None:
        if not isinstance(exc, InterfaceError | OperationalError):
            return None
        return database_unavailable(request, exc)


def database_unavailable(request: HttpRequest, exc: Exception) -> HttpResponse:
    """The 503 of a request that could not reach the database (``exc``, a connection-level
    error): also what a write with an idempotency key answers when its commit fails."""
    log.warning("database unavailable for %s %s: %s", request.method, request.path,
                type(exc).__name__)
    response = error_json(503, "database_unavailable",
                          "The database cannot be reached right now; try again shortly.")
    response["Retry-After"] = str(DatabaseUnavailableMiddleware.RETRY_AFTER_SECONDS)
    return response
