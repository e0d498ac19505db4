"""hango_api.fields: each body field takes its own JSON type and says which it expected;
DRF's own fields would coerce."""

from __future__ import annotations

import uuid

import pytest
from rest_framework import serializers

from hango_api import fields

ID = uuid.uuid4()

CASES = [
    # field, accepted (value, parsed), refused values
    (fields.CharField(), ("x", "x"), [5, 1.5, True, ["x"], {"a": "x"}]),
    (fields.RegexField(r"^a+$"), ("aa", "aa"), [5, False]),
    (fields.ChoiceField(choices=["1", "b"]), ("1", "1"), [1, True, ["b"]]),
    (fields.UUIDField(), (str(ID), ID), [ID.int, 5.0, [str(ID)]]),
    (fields.IntegerField(), (5, 5), ["5", 5.0, 5.5, True, False, [5]]),
    (fields.FloatField(), (5, 5.0), ["5", "5.5", True, False, [5.5], {"a": 1}]),
    (fields.BooleanField(), (True, True), ["true", 1, 0, "yes", [True]]),
    (fields.ListField(child=fields.CharField()), (["x"], ["x"]), ["x", {"a": "x"}, 5]),
    (fields.DictField(child=fields.IntegerField()), ({"a": 1}, {"a": 1}), ["x", [1], 5]),
]


@pytest.mark.parametrize("field, accepted, refused", CASES,
                         ids=[type(c[0]).__name__ for c in CASES])
def test_only_the_json_type_of_the_field_is_read(field, accepted, refused):
    value, parsed = accepted
    assert field.run_validation(value) == parsed
    for wrong in refused:
        with pytest.raises(serializers.ValidationError) as raised:
            field.run_validation(wrong)
        assert raised.value.detail[0].code == "wrong_type", wrong
        assert str(raised.value.detail[0]).startswith(f"Must be {type(field).expected}, not ")


def test_children_are_strict_too():
    with pytest.raises(serializers.ValidationError) as raised:
        fields.ListField(child=fields.IntegerField()).run_validation([1, "2"])
    assert raised.value.detail == {1: ["Must be an integer, not a string."]}


def test_the_field_rules_still_apply_after_the_type():
    with pytest.raises(serializers.ValidationError, match="no more than 2"):
        fields.CharField(max_length=2).run_validation("abc")
    with pytest.raises(serializers.ValidationError, match="may not be null"):
        fields.CharField().run_validation(None)
    assert fields.CharField(allow_null=True).run_validation(None) is None
