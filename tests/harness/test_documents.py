"""harness.documents: strict JSON documents, the list rules pydantic leaves out, problems as
lines, and the schema as the API publishes it."""

from __future__ import annotations

from typing import Annotated, Literal

import pytest
from pydantic import Field, StringConstraints, TypeAdapter

from harness.documents import Document, Items, NeverNull, problems, published_schema

Name = Annotated[str, StringConstraints(pattern=r"^[a-z]+$")]


class Part(Document):
    """A nested object."""

    size: int = 3


class Whole(Document):
    """Its description is the publishing field's to give."""

    kinds: Annotated[tuple[Literal["a", "b"], ...], Items(unique=True, min_items=1)] = ("a",)
    limit: Annotated[int | None, NeverNull()] = Field(None, ge=1)
    """Left out: no limit."""
    by_name: dict[Name, Part] = Field(default_factory=dict)
    part: Part = Field(default_factory=Part)


WHOLE: TypeAdapter[Whole] = TypeAdapter(Whole)


@pytest.mark.parametrize(("value", "lines"), [
    ({}, []),
    ({"kinds": ["b", "a"], "limit": 2, "by_name": {"x": {"size": 1}}}, []),
    ({"kinds": ["a", "a"]}, ["kinds: Items should be unique, 'a' is repeated"]),
    # Only the item's own error: the list is not also called too short.
    ({"kinds": ["c"]}, ["kinds/0: Input should be 'a' or 'b'"]),
    ({"kinds": []}, ["kinds: List should have at least 1 item, not 0"]),
    ({"limit": None}, ["limit: Input should be a valid integer"]),
    ({"limit": 2.0}, ["limit: Input should be a valid integer"]),
    ({"limit": True}, ["limit: Input should be a valid integer"]),
    ({"part": {"size": "3"}}, ["part/size: Input should be a valid integer"]),
    ({"by_name": {"X": {}}}, ["by_name/X/[key]: String should match pattern '^[a-z]+$'"]),
    ({"other": 1}, ["other: Extra inputs are not permitted"]),
    ([], ["(root): Input should be an object"]),
])
def test_a_json_value_is_checked_strictly_and_each_problem_names_its_place(value, lines):
    assert problems(WHOLE, value) == lines


def test_none_is_an_option_left_out_in_python_but_never_a_json_null():
    assert Whole(limit=None) == Whole()
    assert Whole.model_validate_json("{}").limit is None


def test_the_published_schema_states_the_rules_and_stands_alone():
    """No class name as a title, and no default: a client that filled one in could send what
    the rules refuse (a budget's fraction beside the tokens it was given)."""
    schema = published_schema(WHOLE)
    part = {"type": "object", "description": "A nested object.",
            "additionalProperties": False,
            "properties": {"size": {"type": "integer"}}}
    assert schema == {
        "type": "object", "additionalProperties": False,
        "properties": {
            "kinds": {"type": "array", "items": {"enum": ["a", "b"]}, "minItems": 1,
                      "uniqueItems": True},
            "limit": {"type": "integer", "minimum": 1, "description": "Left out: no limit."},
            "by_name": {"type": "object", "propertyNames": {"pattern": "^[a-z]+$"},
                        "additionalProperties": part},
            "part": part,
        },
    }
