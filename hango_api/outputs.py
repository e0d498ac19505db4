"""Answer serializers whose fields DRF would build from the model anew for every object.

A ``ModelSerializer`` maps its model's fields to serializer fields (each field's kwargs from the
model's definition, its validators, its label) on every instance it makes: four fifths of the
time a message post's answer took to serialize. :class:`ModelOutput` maps them once per class
and gives each instance copies, so no instance shares a field (or its binding to a parent) with
another. The fields depend on the class's ``Meta`` and declarations alone, never on the instance
or its context.

DRF deep-copies a field by constructing it anew from its arguments: most of what building an
instance's fields still cost (a third of a post's answer). A plain field is copied shallow
instead: its own object to bind, sharing with the unbound original only what binding and
serializing never change (its arguments, choices, error messages). A field that holds other
fields (a nested serializer, a list's child) is copied deep, as DRF does: those are bound to
it.
"""

from __future__ import annotations

import copy
from typing import Any, ClassVar

from rest_framework import serializers


class ModelOutput(serializers.ModelSerializer):
    """A ``ModelSerializer`` whose fields are mapped from the model once per class."""

    _built_fields: ClassVar[dict[str, Any] | None] = None

    def get_fields(self) -> dict[str, Any]:
        cls = type(self)
        built = cls.__dict__.get("_built_fields")
        if built is None:  # not inherited: a subclass declares fields of its own
            built = super().get_fields()
            cls._built_fields = built
        return {name: _copy(field) for name, field in built.items()}


def _copy(field: serializers.Field) -> serializers.Field:
    if isinstance(field, serializers.BaseSerializer) or hasattr(field, "child") \
            or hasattr(field, "child_relation"):
        return copy.deepcopy(field)
    twin = object.__new__(type(field))  # what copy.copy makes, without its protocol's detours
    twin.__dict__.update(field.__dict__)
    return twin
