"""A user message's content as the API publishes it: the JSON Schema of the text or blocks
:func:`runs.intake.content.user_content` takes, on the field every body that carries one uses (a
posted message, a schedule's, a trigger's, a previewed one)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from harness.messages import IMAGE_TYPES

# Closed objects, as runs.intake.content.user_content reads them: another key is a 422.
_CACHE_CONTROL = {"type": ["object", "null"], "required": ["type"], "additionalProperties": False,
                  "properties": {"type": {"type": "string", "enum": ["ephemeral"]}}}
_TEXT_BLOCK = {"type": "object", "required": ["type", "text"], "additionalProperties": False,
               "properties": {"type": {"type": "string", "enum": ["text"]},
                              "text": {"type": "string"}, "cache_control": _CACHE_CONTROL}}
_TOOL_RESULT_BLOCK = {"type": "object", "required": ["type", "tool_use_id", "content"],
                      "additionalProperties": False, "properties": {
                          "type": {"type": "string", "enum": ["tool_result"]},
                          "tool_use_id": {"type": "string", "minLength": 1},
                          "content": {"type": "string"}, "is_error": {"type": "boolean"},
                          "images": {"type": "array", "items": {
                              "type": "object", "required": ["type", "media_type", "data"],
                              "additionalProperties": False, "properties": {
                                  "type": {"type": "string", "enum": ["image"]},
                                  "media_type": {"type": "string", "enum": list(IMAGE_TYPES)},
                                  "data": {"type": "string", "minLength": 1,
                                           "contentEncoding": "base64",
                                           "description": "base64 of an image of that type"}}}},
                          "cache_control": _CACHE_CONTROL}}


@extend_schema_field({"oneOf": [
    {"type": "string", "pattern": r"\S", "description": "The user's text (not blank)."},
    {"type": "array", "minItems": 1, "description": "text and tool_result blocks (not all "
     "blank text).",
     "items": {"oneOf": [_TEXT_BLOCK, _TOOL_RESULT_BLOCK]}},
]})
class UserContentField(serializers.JSONField):
    """Checked by :func:`runs.intake.content.user_content`: no blank message, no other block
    type."""
