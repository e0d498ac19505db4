"""Explicit input and output shapes for the agent API."""

from __future__ import annotations

import re
from typing import Any

from django.conf import settings
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from agents.config import allowed_tools_problems, config_problems
from agents.models import MODEL_PATTERN, Agent

_MODEL_RE = re.compile(MODEL_PATTERN)


@extend_schema_field(
    {"type": "array", "items": {"type": "string"}, "nullable": True,
     "description": "Tool names this agent may use; null means all."}
)
class AllowedToolsField(serializers.JSONField):
    pass


@extend_schema_field(
    {"type": "object", "additionalProperties": True,
     "description": "Middleware options: max_turns, interrupt_on, summarization, subagents, "
                    "memory, skills. Unknown keys are refused."}
)
class AgentConfigField(serializers.JSONField):
    pass


class AgentInput(serializers.Serializer):
    name = serializers.CharField(max_length=100)
    description = serializers.CharField(allow_blank=True, required=False, max_length=10_000)
    system_prompt = serializers.CharField(
        allow_blank=True, required=False, trim_whitespace=False
    )
    model = serializers.CharField(
        max_length=210, help_text="`<provider>:<model>`, e.g. `anthropic:claude-sonnet-4-5`, "
        "`openai:gpt-4o-mini`, `scripted:demo`."
    )
    allowed_tools = AllowedToolsField(required=False, allow_null=True)
    config = AgentConfigField(required=False)

    def validate_system_prompt(self, value: str) -> str:
        limit = settings.HANGO["MAX_SYSTEM_PROMPT_CHARS"]
        if len(value) > limit:
            raise serializers.ValidationError(f"At most {limit} characters.")
        return value

    def validate_model(self, value: str) -> str:
        if not _MODEL_RE.match(value):
            raise serializers.ValidationError(
                "Use '<provider>:<model>' with provider anthropic, openai or scripted."
            )
        return value

    def validate_allowed_tools(self, value: Any) -> Any:
        problems = allowed_tools_problems(value)
        if problems:
            raise serializers.ValidationError(problems)
        return value

    def validate_config(self, value: Any) -> Any:
        problems = config_problems(value)
        if problems:
            raise serializers.ValidationError(problems)
        return value


class AgentOutput(serializers.ModelSerializer):
    owner = serializers.UUIDField(source="owner_id", read_only=True)
    allowed_tools = AllowedToolsField(read_only=True)
    config = AgentConfigField(read_only=True)

    class Meta:
        model = Agent
        fields = [
            "id", "name", "description", "system_prompt", "model", "allowed_tools", "config",
            "owner", "created_at", "updated_at",
        ]
        read_only_fields = fields
