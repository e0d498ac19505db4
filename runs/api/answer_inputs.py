"""What a caller sends to answer a parked run: a human's decisions (``POST
/v1/runs/{id}/approve``) and the results of client tools' calls (``POST
/v1/runs/{id}/tool-results``), as strict inputs (:mod:`hango_api.inputs`)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from hango_api import fields as strict
from hango_api.inputs import Input
from harness import images
from harness.approval_values import DECISIONS
from harness.messages import IMAGE_TYPES, ImageBlock


def _when(kinds: list[str], then: dict[str, Any]) -> dict[str, Any]:
    return {"if": {"properties": {"type": {"enum": kinds}}}, "then": then}


class DecisionInput(Input):
    """A human's decision on one pending tool call."""

    # validate(): which decision takes which field.
    schema_extra = {"allOf": [
        _when(["edit"], {"required": ["input"]}),
        _when(["approve", "reject", "respond"], {"not": {"required": ["input"]}}),
        _when(["approve", "edit"], {"not": {"required": ["message"]}}),
        _when(["respond"], {"required": ["message"],
                            "properties": {"message": {"pattern": "\\S"}}}),
    ]}

    tool_use_id = strict.CharField(max_length=200)
    type = strict.ChoiceField(choices=DECISIONS)
    input = strict.DictField(required=False,
                             help_text="edit: the new arguments (checked by the tool).")
    message = strict.CharField(
        required=False, allow_blank=True,
        help_text="reject: why (the model reads it as an error result); respond: the text that "
                  "becomes the tool result.")

    def validate(self, data: dict) -> dict:
        kind = data["type"]
        if kind == "edit" and "input" not in data:
            raise serializers.ValidationError({"input": ["An edit needs the new arguments."]})
        if kind != "edit" and "input" in data:
            raise serializers.ValidationError({"input": ["Only an edit takes 'input'."]})
        if kind in ("approve", "edit") and "message" in data:
            raise serializers.ValidationError(
                {"message": ["Only reject and respond take a 'message'."]})
        if kind == "respond" and not data.get("message", "").strip():
            raise serializers.ValidationError(
                {"message": ["A respond decision needs the text that becomes the tool result."]})
        return data


class ApproveInput(Input):
    schema_extra = {"properties": {"decisions": {"minItems": 1}}}

    decisions = DecisionInput(many=True, allow_empty=False,
                              help_text="Exactly one decision per pending tool call.")


_TEXT = {"type": "object", "required": ["type", "text"], "additionalProperties": False,
         "properties": {"type": {"enum": ["text"]}, "text": {"type": "string"}}}
_IMAGE = {"type": "object", "required": ["type", "media_type", "data"],
          "additionalProperties": False,
          "properties": {"type": {"enum": ["image"]}, "media_type": {"enum": list(IMAGE_TYPES)},
                         "data": {"type": "string", "description": "base64"}}}
_BLOCK_KEYS = {"text": {"type", "text"}, "image": {"type", "media_type", "data"}}


@extend_schema_field({"oneOf": [
    {"type": "string", "description": "The tool's result as text."},
    {"type": "array", "description": "Text and image blocks: the texts are joined, the images "
     "go with them (as a tool_result's images in a message).",
     "items": {"oneOf": [_TEXT, _IMAGE]}}]})
class ToolOutputField(serializers.Field):
    """Read into ``(text, images)``: a string, or text and image blocks, each closed."""

    def to_representation(self, value: Any) -> Any:  # input only
        return value

    def to_internal_value(self, data: Any) -> tuple[str, tuple[ImageBlock, ...]]:
        if isinstance(data, str):
            return data, ()
        if not isinstance(data, list):
            raise serializers.ValidationError("Give a string or a list of content blocks.")
        texts: list[str] = []
        shown: list[ImageBlock] = []
        problems = []
        for n, block in enumerate(data):
            kind = block.get("type") if isinstance(block, dict) else None
            if kind not in _BLOCK_KEYS or not isinstance(block, dict):
                problems.append(f"{n}: a block is {{\"type\": \"text\"}} or {{\"type\": "
                                "\"image\"}.")
            elif extra := sorted(set(block) - _BLOCK_KEYS[kind]):
                problems.append(f"{n}/{extra[0]}: Unknown field.")
            elif not all(isinstance(block.get(k), str) for k in _BLOCK_KEYS[kind] - {"type"}):
                problems.append(f"{n}: {', '.join(sorted(_BLOCK_KEYS[kind] - {'type'}))} "
                                "must be strings.")
            elif kind == "text":
                texts.append(block["text"])
            else:
                image = ImageBlock(media_type=block["media_type"], data=block["data"])
                if (problem := images.problem(image)) is not None:
                    problems.append(f"{n}: {problem}")
                shown.append(image)
        if problems:
            raise serializers.ValidationError(problems)
        return "\n\n".join(texts), tuple(shown)


class ToolResultInput(Input):
    """The caller's result for one client tool call."""

    tool_use_id = strict.CharField(max_length=200)
    output = ToolOutputField(help_text="The tool's result: text, or text and image blocks.")
    is_error = strict.BooleanField(required=False, default=False,
                                   help_text="The tool failed; the model reads it as an error.")


class ToolResultsInput(Input):
    schema_extra = {"properties": {"results": {"minItems": 1}}}

    results = ToolResultInput(many=True, allow_empty=False, help_text=(
        "Results for some or all of the run's `required_action.tool_calls`, each once."))
