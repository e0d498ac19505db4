"""Explicit input and output shapes for the context inspector's routes."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from context.models import OverrideAction
from hango_project.config import hango

MAX_OVERRIDES = 1_000


class OverrideInput(serializers.Serializer):
    part = serializers.CharField(max_length=1_100, trim_whitespace=False,
                                 help_text="A part id: `system:<contributor>`, `tool:<name>`, "
                                           "`message:<seq>` or `summary`.")
    action = serializers.ChoiceField(choices=OverrideAction.choices)
    replacement = serializers.CharField(required=False, allow_null=True, allow_blank=True,
                                        trim_whitespace=False,
                                        help_text="replace: the text sent instead of the part's.")

    def validate_replacement(self, value: str | None) -> str | None:
        limit = hango().max_system_prompt_chars
        if value is not None and len(value) > limit:
            raise serializers.ValidationError(f"A replacement has at most {limit} characters.")
        return value

    def validate(self, data: dict[str, Any]) -> dict[str, Any]:
        replacing = data["action"] == "replace"
        if replacing and data.get("replacement") is None:
            raise serializers.ValidationError(
                {"replacement": ["A replace override needs the replacement text."]})
        if not replacing and data.get("replacement") is not None:
            raise serializers.ValidationError(
                {"replacement": ["Only a replace override takes a replacement."]})
        return {**data, "replacement": data.get("replacement") if replacing else None}


class OverrideOutput(serializers.Serializer):
    part = serializers.CharField()
    action = serializers.ChoiceField(choices=OverrideAction.choices)
    replacement = serializers.CharField(allow_null=True)


class OverridesOutput(serializers.Serializer):
    overrides = OverrideOutput(many=True)
    added = serializers.ListField(child=serializers.CharField(),
                                  help_text="Parts excluded because the message they pair with "
                                            "is (a batch's calls and their results go together).")
