"""Explicit input and output shapes for the context overrides' routes: an override as given
and as saved, an agent's or a session's set, and both sets together (the Context panel's
Save)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from context.models import OverrideAction
from hango_api import fields as strict
from hango_api.inputs import Input
from hango_project.config import hango

MAX_OVERRIDES = 1_000


class OverrideInput(Input):
    # validate(): a replacement with replace, and only with it.
    schema_extra = {
        "if": {"properties": {"action": {"const": OverrideAction.REPLACE.value}}},
        "then": {"required": ["replacement"], "properties": {"replacement": {"type": "string"}}},
        "else": {"properties": {"replacement": {"type": "null"}}},
    }

    part = strict.CharField(max_length=1_100, trim_whitespace=False,
                            help_text="A part id: `system:<contributor>`, `tool:<name>`, "
                                      "`message:<seq>` or `summary`.")
    action = strict.ChoiceField(choices=OverrideAction.choices)
    replacement = strict.CharField(required=False, allow_null=True, allow_blank=True,
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


class BothOverridesInput(Input):
    schema_extra = {"anyOf": [{"required": ["agent"]}, {"required": ["session"]}]}

    agent = strict.ListField(child=OverrideInput(), max_length=MAX_OVERRIDES, required=False,
                             help_text="The agent's set (`system:*` and `tool:*` parts), as "
                                       "`PUT /v1/agents/{id}/context-overrides` takes it; "
                                       "absent: left as it is.")
    session = strict.ListField(child=OverrideInput(), max_length=MAX_OVERRIDES, required=False,
                               help_text="The session's set (`message:*` parts and `summary`), "
                                         "as `PUT /v1/sessions/{id}/context-overrides` takes "
                                         "it; absent: left as it is.")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if not attrs:
            raise serializers.ValidationError("Give `agent`, `session` or both: the sets to "
                                              "replace.")
        return attrs


class BothOverridesOutput(serializers.Serializer):
    agent = OverridesOutput(help_text="The agent's set, for every session of the agent.")
    session = OverridesOutput(help_text="The session's set, with the pairs added.")
