"""JSON documents as strict pydantic types: the list rules pydantic leaves out, problems as
readable lines, and the JSON schema as the API publishes it.

A document (an agent's ``config``, a tool list) is validated as JSON, strictly: a JSON integer is
an integer (5.0 and true are not), a key the type does not name is refused, and nothing is
coerced. Its type's JSON schema is what the API publishes, generated here so it states the
rules the type checks and nothing else.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    GetCoreSchemaHandler,
    GetJsonSchemaHandler,
    TypeAdapter,
    ValidationError,
)
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import CoreSchema, PydanticCustomError, core_schema

T = TypeVar("T")


class Document(BaseModel):
    """An object of a JSON document: JSON's own types only, no key it does not name (a typo is
    an error, not an ignored option), never changed once parsed."""

    model_config = ConfigDict(strict=True, frozen=True, extra="forbid",
                              use_attribute_docstrings=True)


@dataclass(frozen=True)
class Items:
    """Rules on a list that pydantic's own constraints leave out or word oddly, checked once
    every item is valid: ``unique`` (JSON Schema's ``uniqueItems``; a set would drop a repeat
    silently rather than refuse it) and ``min_items`` (pydantic's ``min_length`` also calls a
    list too short when its only item is refused)."""

    unique: bool = False
    min_items: int = 0

    def __get_pydantic_core_schema__(self, source: Any,
                                     handler: GetCoreSchemaHandler) -> CoreSchema:
        return core_schema.no_info_after_validator_function(self._checked, handler(source))

    def __get_pydantic_json_schema__(self, schema: CoreSchema,
                                     handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        published = handler(schema)
        if self.min_items:
            published["minItems"] = self.min_items
        if self.unique:
            published["uniqueItems"] = True
        return published

    def _checked(self, items: tuple[T, ...]) -> tuple[T, ...]:
        if len(items) < self.min_items:
            raise PydanticCustomError("too_short", "List should have at least {min} item, not {n}",
                                      {"min": self.min_items, "n": len(items)})
        if self.unique and len(set(items)) < len(items):
            repeated = next(item for i, item in enumerate(items) if item in items[:i])
            raise PydanticCustomError("unique_items", "Items should be unique, {item} is repeated",
                                      {"item": repr(repeated)})
        return items


class NeverNull:
    """On an optional field: None is the option left out, never a JSON null sent for it (a
    document has no nulls), so JSON is checked, and published, as the type alone."""

    def __get_pydantic_core_schema__(self, source: Any,
                                     handler: GetCoreSchemaHandler) -> CoreSchema:
        schema = handler(source)
        if schema["type"] != "nullable":
            return schema
        return core_schema.json_or_python_schema(json_schema=schema["schema"],
                                                 python_schema=schema)


def error_lines(error: ValidationError) -> list[str]:
    """Every way a document failed, as ``path: message`` lines (``(root)`` for the document
    itself)."""
    return [f"{'/'.join(str(step) for step in e['loc']) or '(root)'}: {e['msg']}"
            for e in error.errors(include_url=False)]


def problems(adapter: TypeAdapter[Any], value: Any) -> list[str]:
    """Readable reasons the JSON value ``value`` is not of ``adapter``'s type; empty when it
    is."""
    try:
        adapter.validate_json(json.dumps(value), strict=True)
    except ValidationError as exc:
        return error_lines(exc)
    return []


def published_schema(adapter: TypeAdapter[Any]) -> dict[str, Any]:
    """``adapter``'s type's JSON schema as the API publishes it (:class:`_Published`)."""
    return adapter.json_schema(schema_generator=_Published)


class _Published(GenerateJsonSchema):
    """Every rule the type checks and nothing it does not; one object with no ``$defs`` (a
    field's schema in OpenAPI cannot point into itself), described by the field that publishes
    it."""

    def generate(self, schema: CoreSchema, mode: Any = "validation") -> JsonSchemaValue:
        generated = super().generate(schema, mode)
        generated.pop("description", None)
        defs = generated.pop("$defs", {})
        return _inlined(generated, defs)  # type: ignore[no-any-return]

    def default_schema(self, schema: core_schema.WithDefaultSchema) -> JsonSchemaValue:
        # No default is published: a client that fills one in (trigger_fraction's 0.8 beside a
        # trigger_tokens it was given) would send what the rules refuse. Left out is the default.
        return self.generate_inner(schema["schema"])

    def model_schema(self, schema: core_schema.ModelSchema) -> JsonSchemaValue:
        published = super().model_schema(schema)
        published.pop("title", None)  # a class name ("SummarizationOptions") says nothing
        return published

    def dict_schema(self, schema: core_schema.DictSchema) -> JsonSchemaValue:
        # pydantic writes a key pattern as patternProperties, which lets any other key through.
        published = super().dict_schema(schema)
        if "patternProperties" in published:
            ((pattern, values),) = published.pop("patternProperties").items()
            published["propertyNames"] = {"pattern": pattern}
            published["additionalProperties"] = values
        return published

    def literal_schema(self, schema: core_schema.LiteralSchema) -> JsonSchemaValue:
        # The values say what it takes, as a refusal does ("Input should be 'approve', …").
        published = super().literal_schema(schema)
        published.pop("type", None)
        return published

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False  # "Max Turns" says nothing "max_turns" does not


def _inlined(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, list):
        return [_inlined(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        named = defs[node["$ref"].removeprefix("#/$defs/")]
        node = {**named, **{k: v for k, v in node.items() if k != "$ref"}}
    return {key: _inlined(value, defs) for key, value in node.items()}
