"""List pages: ``{"results", "next", "previous"}`` with a capped ``limit``."""

from django.conf import settings
from rest_framework.exceptions import NotFound
from rest_framework.pagination import CursorPagination

from hango_project.errors import BadQuery


class CursorPage(CursorPagination):
    """Cursor pages are stable while rows are added (new messages never shift a page)."""

    page_size_query_param = "limit"
    ordering = ("-created_at", "-id")

    def __init__(self) -> None:
        self.page_size = settings.HANGO["PAGE_SIZE"]
        self.max_page_size = settings.HANGO["MAX_PAGE_SIZE"]

    def decode_cursor(self, request):  # type: ignore[no-untyped-def]
        # DRF answers a bad cursor with 404, which would read as "the list does not exist".
        try:
            return super().decode_cursor(request)
        except NotFound as exc:
            raise BadQuery("The cursor is invalid.", detail={"cursor": str(exc.detail)}) from exc


class SeqPage(CursorPage):
    """Messages in conversation order."""

    ordering = ("seq",)
