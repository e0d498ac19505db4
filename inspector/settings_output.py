"""The inspector's view of an agent's model settings
(:class:`harness.model_settings.ModelSettings`)."""

from __future__ import annotations

from typing import get_args

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from harness.model_settings import OutputSource, WindowSource


@extend_schema_field({"anyOf": [
    {"type": "string", "enum": ["auto", "required", "none"]},
    {"type": "object", "required": ["name"], "additionalProperties": False,
     "properties": {"name": {"type": "string"}}},
    {"type": "null"}]})
class ToolChoiceField(serializers.JSONField):
    """A keyword, or the one tool every answer must call."""


class ModelSettingsOutput(serializers.Serializer):
    max_output_tokens = serializers.IntegerField(
        help_text="The most tokens an answer may take: what each call asks for (max_tokens) and "
                  "what the quota holds beside its input.")
    max_output_tokens_source = serializers.ChoiceField(
        choices=get_args(OutputSource), help_text="`agent`: its config sets it; `default`: "
        "hango's 4,096, within the model's known maximum output and half its window.")
    context_window = serializers.IntegerField(help_text="The window the budget is a part of.")
    context_window_source = serializers.ChoiceField(
        choices=get_args(WindowSource), help_text="`agent`: its config sets it; `model_table`: "
        "hango's table of known models; `server`: the model's server reports it; `default`: "
        "the provider's default, a guess for a model hango does not know (set it).")
    temperature = serializers.FloatField(allow_null=True, help_text="Null: not sent.")
    top_p = serializers.FloatField(allow_null=True, help_text="Null: not sent.")
    stop = serializers.ListField(child=serializers.CharField(), help_text="Stop texts sent.")
    tool_choice = ToolChoiceField(
        allow_null=True, help_text='`auto`, `required`, `none`, or `{"name": <tool>}`; null: '
                                   "not sent (the server decides, as with auto).")
    parallel_tool_calls = serializers.BooleanField(allow_null=True, help_text="Null: not sent.")
    reasoning_effort = serializers.CharField(allow_null=True, help_text="Null: not sent.")
