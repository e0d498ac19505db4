"""The base of every request body's serializer: a body holds its own fields and nothing else.

DRF's serializers drop a key they have no field for, so a misspelt field (``"nmae"``) or a
server-owned one (``"tenant"``, ``"id"``) would be ignored and the request answered as if it
were right. :class:`Input` refuses them instead: each unknown key is a 422 ``{"<key>":
["Unknown field."]}``, beside the body's other errors, at any depth a serializer describes (a
nested serializer, or the items of a list of them). The schema says so too: every ``Input``
publishes ``additionalProperties: false`` (:class:`ClosedInputSchema`), and a test walks every
body of the API with an unknown field at each such place.

What a field's own schema cannot say (a pattern a validator checks, a rule between fields) an
``Input`` declares in :attr:`Input.schema_extra`, published with its schema, so the schema
refuses what the server refuses (a fuzzer checks both ways: ``bench/fuzz_api.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from drf_spectacular.extensions import OpenApiSerializerExtension
from rest_framework import serializers
from rest_framework.exceptions import ErrorDetail

UNKNOWN_FIELD = "Unknown field."


class Input(serializers.Serializer):
    """A request body (or an object inside one) whose keys must all be its fields."""

    # Published with the schema: ``{"properties": {field: {keyword: value}}, keyword: value}``.
    # A PATCH body takes the per-field keywords and those under ``"patch"``, not the others: a
    # rule between fields holds for the object as saved, which a partial body does not show.
    schema_extra: ClassVar[Mapping[str, Any]] = {}

    def unknown_fields(self, data: Any) -> list[str]:
        """The keys of ``data`` this serializer has no writable field for, in their order."""
        if not isinstance(data, Mapping):
            return []  # not an object: DRF's own "invalid" error says so
        known = {name for name, field in self.fields.items() if not field.read_only}
        return [key for key in data if key not in known]

    def to_internal_value(self, data: Any) -> Any:
        unknown = {key: [ErrorDetail(UNKNOWN_FIELD, code="unknown_field")]
                   for key in self.unknown_fields(data)}
        try:
            value = super().to_internal_value(data)
        except serializers.ValidationError as exc:
            if unknown and isinstance(exc.detail, dict):
                raise serializers.ValidationError({**unknown, **exc.detail}) from None
            raise
        if unknown:
            raise serializers.ValidationError(unknown)
        return value


class ClosedInputSchema(OpenApiSerializerExtension):
    """drf-spectacular: an :class:`Input` (any subclass) is a closed object in the schema."""

    target_class = Input
    match_subclasses = True

    def map_serializer(self, auto_schema: Any, direction: Any) -> dict[str, Any]:
        schema: dict[str, Any] = auto_schema._map_serializer(self.target, direction,
                                                             bypass_extensions=True)
        extra = dict(self.target.schema_extra)
        for name, keywords in extra.pop("properties", {}).items():
            schema["properties"][name].update(keywords)
        patch = extra.pop("patch", {})
        schema.update(patch if getattr(self.target, "partial", False) else extra)
        return {**schema, "additionalProperties": False}
