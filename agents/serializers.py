"""Explicit input and output shapes for the agent, memory and skill APIs."""

from __future__ import annotations

import re
from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from agents.config import allowed_tools_problems, config_problems
from agents.models import (
    MODEL_PATTERN,
    SKILL_NAME_PATTERN,
    Agent,
    AgentVersion,
    MemoryFile,
    Skill,
)
from hango_api import fields as strict
from hango_api.inputs import Input
from hango_api.schema import published
from hango_project.config import hango
from harness.agent import CONFIG_SCHEMA, TOOL_LIST_SCHEMA
from harness.middleware.memory import MAX_PATH_CHARS, content_problem, path_problem

_MODEL_RE = re.compile(MODEL_PATTERN)


def _checked(problems: list[str], value: Any) -> Any:
    """``value`` if ``problems`` is empty, else a validation error listing them."""
    if problems:
        raise serializers.ValidationError(problems)
    return value


# The list alone: the fields allow null, which drf-spectacular adds.
@extend_schema_field(published(TOOL_LIST_SCHEMA, "Tool names this agent may use, each a tool a "
                               "run can offer (another name is a 422); null means all."))
class AllowedToolsField(serializers.JSONField):
    pass


@extend_schema_field(published(CONFIG_SCHEMA, "Middleware options; unknown keys are refused, "
                               "and so are tool names no run can offer."))
class AgentConfigField(serializers.JSONField):
    pass


@extend_schema_field(published(TOOL_LIST_SCHEMA,
                               "Tools a loaded skill brings, each a tool a run can offer; null or "
                               "[] brings none. Never past the agent's allowed_tools."))
class SkillToolsField(serializers.JSONField):
    pass


class AgentInput(Input):
    schema_extra = {"properties": {"model": {"pattern": MODEL_PATTERN}}}

    name = strict.CharField(max_length=100)
    description = strict.CharField(allow_blank=True, required=False, max_length=10_000)
    system_prompt = strict.CharField(
        allow_blank=True, required=False, trim_whitespace=False
    )
    model = strict.CharField(
        max_length=210, help_text="`<provider>:<model>`, e.g. `anthropic:claude-sonnet-4-5`, "
        "`openai:gpt-4o-mini`; offline, with no key: `scripted:demo`, `scripted:calls` (the "
        "tool calls the message asks for) and `scripted:workload-<T>` (T tool-calling turns)."
    )
    allowed_tools = AllowedToolsField(required=False, allow_null=True)
    config = AgentConfigField(required=False)

    def validate_system_prompt(self, value: str) -> str:
        limit = hango().max_system_prompt_chars
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
        return _checked(allowed_tools_problems(value), value)

    def validate_config(self, value: Any) -> Any:
        return _checked(config_problems(value), value)


class AgentOutput(serializers.ModelSerializer):
    owner = serializers.UUIDField(source="owner_id", read_only=True)
    allowed_tools = AllowedToolsField(read_only=True, allow_null=True)
    config = AgentConfigField(read_only=True)

    class Meta:
        model = Agent
        fields = [
            "id", "name", "description", "system_prompt", "model", "allowed_tools", "config",
            "version", "owner", "created_at", "updated_at",
        ]
        read_only_fields = fields
        extra_kwargs = {"version": {"help_text": "The number of its latest version: "
                                                 "`GET /v1/agents/{id}/versions/{number}`."}}


class AgentVersionOutput(serializers.ModelSerializer):
    agent = serializers.UUIDField(source="agent_id", read_only=True)
    author = serializers.UUIDField(
        source="author_id", read_only=True, allow_null=True,
        help_text="The member who made the change; null: the system (a skill or MCP server "
                  "deleted and detached, or the version every agent had when versions began).")
    allowed_tools = AllowedToolsField(read_only=True, allow_null=True)
    config = AgentConfigField(read_only=True)

    class Meta:
        model = AgentVersion
        fields = ["agent", "number", "content_hash", "system_prompt", "model", "allowed_tools",
                  "config", "author", "created_at"]
        read_only_fields = fields
        extra_kwargs = {"content_hash": {"help_text": "sha256 (hex) of the content "
                                         "(system_prompt, model, allowed_tools, config) as "
                                         "canonical JSON: equal for equal content."}}


class MemoryContentField(strict.CharField):
    """A memory file's content: any text up to the memory budget (UTF-8 bytes)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(allow_blank=True, trim_whitespace=False, **kwargs)

    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data)
        problem = content_problem(value, hango().memory_max_bytes)
        if problem:
            raise serializers.ValidationError(problem)
        return value


class MemoryFileInput(Input):
    # What harness.middleware.memory.path_problem checks, but the control characters.
    schema_extra = {"properties": {"path": {
        "maxLength": MAX_PATH_CHARS, "pattern": r"^(?:/(?!\.\.?(?:/|$))[^/]+)+$"}}}

    path = strict.CharField(
        trim_whitespace=False,
        help_text='Absolute and normalized, at most 255 characters, e.g. "/memories/AGENTS.md".')
    content = MemoryContentField()

    def validate_path(self, value: str) -> str:
        problem = path_problem(value)
        if problem:
            raise serializers.ValidationError(problem)
        return value


class MemoryContentInput(Input):
    content = MemoryContentField()


class MemoryFileOutput(serializers.ModelSerializer):
    class Meta:
        model = MemoryFile
        fields = ["path", "content", "updated_at"]
        read_only_fields = fields


class SkillInput(Input):
    name = strict.RegexField(
        SKILL_NAME_PATTERN, max_length=64,
        error_messages={"invalid": "Use lowercase letters, digits and single hyphens, e.g. "
                                   "'pdf-forms'."},
        help_text="Unique in the tenant: lowercase letters, digits and hyphens, at most 64.")
    description = strict.CharField(
        max_length=1024, help_text="What the skill is for; the agent reads it in its index.")
    instructions = strict.CharField(
        allow_blank=True, required=False, trim_whitespace=False,
        help_text="The full instructions load_skill returns.")
    allowed_tools = SkillToolsField(required=False, allow_null=True)

    def validate_instructions(self, value: str) -> str:
        limit = hango().skill_max_instructions_chars
        if len(value) > limit:
            raise serializers.ValidationError(f"At most {limit} characters.")
        return value

    def validate_allowed_tools(self, value: Any) -> Any:
        return _checked(allowed_tools_problems(value), value)


class SkillOutput(serializers.ModelSerializer):
    allowed_tools = SkillToolsField(read_only=True, allow_null=True)

    class Meta:
        model = Skill
        fields = ["id", "name", "description", "instructions", "allowed_tools"]
        read_only_fields = fields
