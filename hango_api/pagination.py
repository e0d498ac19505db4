"""List pages: ``{"results", "next", "previous"}`` with a capped ``limit``."""

from datetime import datetime

from django.core.exceptions import ValidationError as DjangoValidationError
from django.utils import timezone
from rest_framework.exceptions import NotFound
from rest_framework.pagination import Cursor, CursorPagination
from rest_framework.request import Request

from hango_api.query import storable_offset
from hango_project.config import hango
from hango_project.errors import BadQuery


class CursorPage(CursorPagination):
    """Cursor pages are stable while rows are added (new messages never shift a page)."""

    page_size_query_param = "limit"
    ordering: tuple[str, ...] = ("-created_at", "-id")

    def __init__(self) -> None:
        self.page_size = hango().page_size
        self.max_page_size = hango().max_page_size

    def get_paginated_response_schema(self, schema: dict) -> dict:
        # DRF's requires only "results" and says "nullable" (OpenAPI 3.0); every page has all
        # three keys, and the schema is OpenAPI 3.1.
        page = super().get_paginated_response_schema(schema)
        for link in ("next", "previous"):
            page["properties"][link].pop("nullable")
            page["properties"][link]["type"] = ["string", "null"]
        page["required"] = ["results", "next", "previous"]
        return page

    def get_schema_operation_parameters(self, view) -> list[dict]:
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.page_size_query_param:
                parameter["schema"]["minimum"] = 1
                parameter["description"] = (f"Items per page, at most {hango().max_page_size} "
                                            f"(default {hango().page_size}).")
        return parameters

    def get_page_size(self, request: Request) -> int:
        """``?limit=``: absent, the default; above the cap, the cap; anything but a positive
        integer is a 400 (DRF would quietly answer a page of the default size)."""
        raw = request.query_params.get(self.page_size_query_param)
        if raw is None:
            return hango().page_size
        if not raw.isascii() or not raw.isdigit() or int(raw) < 1:
            raise BadQuery("'limit' must be a positive integer.", detail={"limit": raw})
        return min(int(raw), hango().max_page_size)

    def paginate_queryset(self, queryset, request, view=None):
        self._model = queryset.model
        return super().paginate_queryset(queryset, request, view)

    def decode_cursor(self, request: Request) -> Cursor | None:
        # DRF answers a bad cursor with 404, which would read as "the list does not exist".
        try:
            cursor = super().decode_cursor(request)
        except NotFound as exc:
            raise BadQuery("The cursor is invalid.", detail={"cursor": str(exc.detail)}) from exc
        if cursor is not None and cursor.position is not None:
            cursor = self._checked(cursor)
        return cursor

    def _checked(self, cursor: Cursor) -> Cursor:
        """The cursor's position must be a value of the ordering field (a client can forge any
        string); DRF would pass it to the query as is and fail there, as a 500."""
        field = self._model._meta.get_field(self.ordering[0].lstrip("-"))
        try:
            value = field.to_python(cursor.position)
        except DjangoValidationError:
            value = None
        if not _queryable(value):
            raise BadQuery("The cursor is invalid.", detail={"cursor": "Invalid cursor"})
        return cursor


def _queryable(value: object) -> bool:
    """Whether PostgreSQL takes ``value`` in a comparison: a time must be aware, with an offset
    it can store; text must hold no NUL."""
    if isinstance(value, datetime):
        return timezone.is_aware(value) and storable_offset(value)
    if isinstance(value, str):
        return "\x00" not in value
    return value is not None


class SeqPage(CursorPage):
    """Messages in conversation order."""

    ordering = ("seq",)
