"""Serializer fields for request bodies: each takes its own JSON type and nothing else.

DRF's fields coerce: a CharField stores ``5`` as ``"5"``, an IntegerField reads ``"5"`` and
``5.0``, a BooleanField ``"yes"`` and ``1``, a UUIDField an integer. hango's bodies are JSON, so a
value of the wrong JSON type is a 422 saying which type was expected; every input serializer
builds on these fields (a test walks every body of the API with values of the wrong types).
Query parameters are strings by nature and are parsed apart (:mod:`hango_api.query`).
"""

from __future__ import annotations

from typing import Any, ClassVar

from rest_framework import serializers


def json_type(value: Any) -> str:
    """The JSON type of a decoded value, as an error message names it."""
    match value:
        case None:
            return "null"
        case bool():
            return "a boolean"
        case int():
            return "an integer"
        case float():
            return "a number"
        case str():
            return "a string"
        case list():
            return "an array"
        case dict():
            return "an object"
    return type(value).__name__


class _Typed(serializers.Field):
    """Refuses a value of the wrong JSON type before the DRF field reads (and coerces) it."""

    expected: ClassVar[str]
    default_error_messages = {"wrong_type": "Must be {expected}, not {actual}."}

    def accepts(self, data: Any) -> bool:
        raise NotImplementedError

    def to_internal_value(self, data: Any) -> Any:
        if not self.accepts(data):
            self.fail("wrong_type", expected=self.expected, actual=json_type(data))
        return super().to_internal_value(data)


class _Text(_Typed):
    expected = "a string"

    def accepts(self, data: Any) -> bool:
        return isinstance(data, str)


class CharField(_Text, serializers.CharField):
    pass


class RegexField(_Text, serializers.RegexField):
    pass


class DecimalField(_Text, serializers.DecimalField):
    """Money and rates are decimal text (``"0.30"``): a JSON number would pass through a float
    on its way in."""


class ChoiceField(_Text, serializers.ChoiceField):
    """Choices are strings: ``1`` is not the choice ``"1"``."""


class UUIDField(_Text, serializers.UUIDField):
    pass


class IntegerField(_Typed, serializers.IntegerField):
    expected = "an integer"

    def accepts(self, data: Any) -> bool:
        # JSON's 5.0 decodes as a float: a number, not an integer.
        return isinstance(data, int) and not isinstance(data, bool)


class FloatField(_Typed, serializers.FloatField):
    expected = "a number"

    def accepts(self, data: Any) -> bool:
        return isinstance(data, int | float) and not isinstance(data, bool)


class BooleanField(_Typed, serializers.BooleanField):
    expected = "a boolean"

    def accepts(self, data: Any) -> bool:
        return isinstance(data, bool)


class ListField(_Typed, serializers.ListField):
    expected = "an array"

    def accepts(self, data: Any) -> bool:
        return isinstance(data, list)


class DictField(_Typed, serializers.DictField):
    expected = "an object"

    def accepts(self, data: Any) -> bool:
        return isinstance(data, dict)
