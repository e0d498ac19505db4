"""The one request parser: JSON, refusing what the database could not store."""

from __future__ import annotations

from collections.abc import Mapping
from typing import IO, Any

from rest_framework import parsers
from rest_framework.exceptions import ParseError, ValidationError


def _unstorable(value: Any, where: str = "") -> str | None:
    """The path of the first string PostgreSQL refuses (NUL, a lone surrogate), or None."""
    if isinstance(value, str):
        if "\x00" in value or any("\ud800" <= c <= "\udfff" for c in value):
            return where or "(root)"
        return None
    if isinstance(value, dict):
        items: Any = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return None
    for key, item in items:
        path = f"{where}/{key}".lstrip("/")
        if isinstance(key, str) and _unstorable(key) or (found := _unstorable(item, path)):
            return found or path
    return None


class JSONParser(parsers.JSONParser):
    def parse(self, stream: IO[Any], media_type: str | None = None,
              parser_context: Mapping[str, Any] | None = None) -> dict[str, Any]:
        # DRF turns a ValueError into ParseError, but the decoder raises RecursionError for a
        # body like "[[[[…" (well under the size cap), which would otherwise be a 500.
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError("JSON parse error - the document is nested too deeply.") from None
        # Checked once here for every route, rather than as a failed INSERT (a 500) later.
        where = _unstorable(data)
        if where is not None:
            raise ValidationError(
                {where: ["NUL and lone surrogate characters are not allowed."]})
        return data
