"""``/v1/sessions/{id}/files``: the session's virtual filesystem, read-only.

The agent writes these files with its file tools (FilesystemMiddleware); clients list and read
them. Visibility is the session's: whoever may read its messages may read its files.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.authentication import caller
from hango_api.pagination import CursorPage
from hango_api.views import ListApi, paginated
from hango_project.errors import NotFound
from harness.tools.files import FileError, normalize_path
from runs.api.serializers import FileContentOutput, FileOutput
from runs.intake import selectors


class PathPage(CursorPage):
    """Files in path order (a path is unique within a session, so the cursor is stable)."""

    ordering = ("path",)


class SessionFilesApi(ListApi):
    pagination_class = PathPage

    @extend_schema(operation_id="sessions_files_list", responses=FileOutput(many=True))
    def get(self, request, session_id):
        session = selectors.session_get(member=caller(request), session_id=session_id)
        return paginated(self, selectors.file_list(session=session), FileOutput)


class SessionFileDetailApi(APIView):
    @extend_schema(
        operation_id="sessions_files_retrieve",
        parameters=[OpenApiParameter(
            "path", str, OpenApiParameter.PATH,
            description="The file's absolute path without its leading '/', e.g. notes/plan.md.")],
        responses=FileContentOutput,
    )
    def get(self, request, session_id, path):
        session = selectors.session_get(member=caller(request), session_id=session_id)
        try:
            normalized = normalize_path("/" + path.lstrip("/"))
        except FileError:
            raise NotFound("File not found.") from None
        found = selectors.file_get(session=session, path=normalized)
        return Response(FileContentOutput(found).data)
