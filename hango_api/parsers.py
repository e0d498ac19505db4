"""The one request parser: JSON, refusing what the database could not store."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import IO, Any

from rest_framework import parsers
from rest_framework.exceptions import ParseError, ValidationError

# What PostgreSQL refuses in text and jsonb: NUL, and UTF-16 surrogates standing alone (JSON's
# "\ud800" escape decodes to one; no UTF-8 text can carry it).
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def _shown(key: object) -> str:
    """A key as it appears in an error's path: unstorable characters escaped, since the error
    body must itself be encodable (a lone surrogate is not valid UTF-8)."""
    return _UNSTORABLE.sub(lambda m: f"\\u{ord(m.group()):04x}", str(key))


def unstorable_path(document: Any) -> str | None:
    """The path (``"config/subagents/0/name"``) of a key or string in ``document`` that
    PostgreSQL could not store, or None. ``"(root)"`` when the document is such a string."""
    # A walk with its own stack: a document nested just under the decoder's limit must not
    # overflow Python's.
    pending: list[tuple[str, Any]] = [("", document)]
    while pending:
        where, value = pending.pop()
        if isinstance(value, str):
            if _UNSTORABLE.search(value):
                return where or "(root)"
            continue
        if isinstance(value, dict):
            items: Any = value.items()
        elif isinstance(value, list):
            items = enumerate(value)
        else:
            continue
        children = []
        for key, item in items:
            path = f"{where}/{_shown(key)}" if where else _shown(key)
            if isinstance(key, str) and _UNSTORABLE.search(key):
                return path
            children.append((path, item))
        pending.extend(reversed(children))  # depth first, in document order
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
        where = unstorable_path(data)
        if where is not None:
            raise ValidationError(
                {where: ["NUL and lone surrogate characters are not allowed."]})
        return data
