"""Explicit input and output shapes for sessions and messages."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from runs.models import Message, Session


class SessionInput(serializers.Serializer):
    agent = serializers.UUIDField()
    title = serializers.CharField(max_length=200, required=False, allow_blank=True)


class SessionOutput(serializers.ModelSerializer):
    agent = serializers.UUIDField(source="agent_id", read_only=True)
    active_run = serializers.UUIDField(source="active_run_id", read_only=True, allow_null=True)

    class Meta:
        model = Session
        fields = ["id", "agent", "title", "active_run", "created_at", "updated_at"]
        read_only_fields = fields


@extend_schema_field(
    {
        "type": "array",
        "description": "Content blocks: text, tool_use or tool_result.",
        "items": {"type": "object", "properties": {"type": {"type": "string"}},
                  "required": ["type"], "additionalProperties": True},
    }
)
class ContentField(serializers.JSONField):
    pass


class MessageOutput(serializers.ModelSerializer):
    run = serializers.UUIDField(source="run_id", read_only=True, allow_null=True)
    content = ContentField(read_only=True)

    class Meta:
        model = Message
        fields = ["id", "seq", "role", "content", "run", "created_at"]
        read_only_fields = fields
