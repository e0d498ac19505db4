"""``GET /v1/audit``: the tenant's audit log, for owners and admins. Read-only: the route has no
other method (POST, PUT, PATCH and DELETE answer 405), so no API route changes or deletes a row."""

from __future__ import annotations

from datetime import datetime

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers

from accounts.audit import AuditNotReadable, audit_list
from accounts.authentication import caller
from accounts.models import AuditAction, AuditEntry
from hango_api.query import query_time
from hango_api.views import ListApi, paginated
from hango_project.errors import BadQuery


class AuditEntryOutput(serializers.ModelSerializer):
    actor = serializers.UUIDField(source="actor_id", allow_null=True, read_only=True,
                                  help_text="The member who made the write; null for the "
                                            "command line or the Django admin.")
    detail = serializers.JSONField(read_only=True, help_text="What changed: names and ids, "
                                   "never secrets, message content or replacement text.")

    class Meta:
        model = AuditEntry
        fields = ["id", "action", "actor", "object_type", "object_id", "detail", "created_at"]
        read_only_fields = fields


class AuditListApi(ListApi):
    @extend_schema(
        operation_id="audit_list",
        parameters=[
            OpenApiParameter("action", str, enum=AuditAction.values,
                             description="Only rows of this action."),
            OpenApiParameter("object_type", str, description="Only rows about this kind of "
                             "object (agent, memory_file, skill, session, run, api_key)."),
            OpenApiParameter("since", datetime, description="Only rows at or after this time "
                             "(ISO 8601; a date means its UTC midnight)."),
        ],
        responses={200: AuditEntryOutput(many=True), 403: OpenApiResponse(
            description="The caller's role (member) may not read the audit log.")},
    )
    def get(self, request):
        """The tenant's audit rows, newest first (owners and admins only)."""
        member = caller(request)
        if not member.sees_whole_tenant:  # the role is refused before any filter is read
            raise AuditNotReadable()
        action = request.query_params.get("action") or None
        if action is not None and action not in AuditAction.values:
            raise BadQuery(f"Unknown action {action!r}.", detail={"action": AuditAction.values})
        rows = audit_list(member=member, action=action,
                          object_type=request.query_params.get("object_type") or None,
                          since=query_time(request.query_params, "since"))
        return paginated(self, rows, AuditEntryOutput)
