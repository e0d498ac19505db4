"""hango_api.inputs: a body's serializer refuses every key it has no field for, at every depth a
serializer describes, beside the body's other errors; the schema publishes it closed."""

from __future__ import annotations

import pytest
from rest_framework import serializers

from hango_api import fields
from hango_api.inputs import Input
from tests.support.openapi import api_schema


class Item(Input):
    name = fields.CharField()


class Body(Input):
    title = fields.CharField(required=False)
    count = fields.IntegerField(required=False)
    items = Item(many=True, required=False)
    tags = fields.ListField(child=Item(), required=False)
    shown = serializers.CharField(read_only=True)


def errors(data, **kwargs):
    serializer = Body(data=data, **kwargs)
    assert not serializer.is_valid()
    return serializer.errors


def test_known_fields_pass():
    serializer = Body(data={"title": "t", "items": [{"name": "a"}], "tags": [{"name": "b"}]})
    assert serializer.is_valid(), serializer.errors
    assert serializer.validated_data["title"] == "t"


def test_each_unknown_field_is_named():
    found = errors({"title": "t", "nmae": 1, "tenant": "x"})
    assert found == {"nmae": ["Unknown field."], "tenant": ["Unknown field."]}
    assert found["nmae"][0].code == "unknown_field"


def test_unknown_fields_are_refused_on_a_partial_update_too():
    assert errors({"id": "x"}, partial=True) == {"id": ["Unknown field."]}


def test_a_read_only_field_is_not_a_field_a_body_may_send():
    assert errors({"shown": "x"}) == {"shown": ["Unknown field."]}


def test_unknown_fields_come_with_the_other_errors():
    assert errors({"count": "5", "nmae": 1}) == {
        "nmae": ["Unknown field."], "count": ["Must be an integer, not a string."]}


def test_nested_serializers_refuse_their_unknown_fields():
    assert errors({"items": [{"name": "a"}, {"name": "b", "x": 1}]}) == {
        "items": {1: {"x": ["Unknown field."]}}}
    assert errors({"tags": [{"name": "a", "y": 1}]}) == {"tags": {0: {"y": ["Unknown field."]}}}


@pytest.mark.parametrize("data", [[], "x", 5])
def test_a_body_that_is_not_an_object_says_so(data):
    assert list(errors(data)) == ["non_field_errors"]


def test_every_body_component_of_the_schema_is_closed():
    components = api_schema()["components"]["schemas"]
    bodies = [name for name in components if name.endswith("Request")]
    assert len(bodies) >= 15
    for name in bodies:
        assert components[name]["additionalProperties"] is False, name
