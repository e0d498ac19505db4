"""Answer serializers whose fields DRF would build from the model anew for every object.

A ``ModelSerializer`` maps its model's fields to serializer fields (each field's kwargs from the
model's definition, its validators, its label) on every instance it makes: four fifths of the
time a message post's answer took to serialize. :class:`ModelOutput` maps them once per class
and gives each instance a deep copy, as DRF itself does with a serializer's declared fields,
so no instance shares a field (or its binding to a parent) with another. The fields depend on
the class's ``Meta`` and declarations alone, never on the instance or its context.
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
        return copy.deepcopy(built)
