"""Values computed once per live object, shared by the token counters and the inspector."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any, Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class IdentityCache(Generic[V]):
    """Values computed once per live object: keyed by ``id``, held by weak reference, so an
    entry goes when its object does and an id is never confused with a later object's."""

    def __init__(self) -> None:
        self._entries: dict[int, tuple[weakref.ref[Any], V]] = {}

    def get(self, obj: K, compute: Callable[[K], V]) -> V:
        key = id(obj)
        entry = self._entries.get(key)
        if entry is not None and entry[0]() is obj:
            return entry[1]
        value = compute(obj)
        self.put(obj, value)
        return value

    def put(self, obj: Any, value: V) -> None:
        """Know ``obj``'s value without computing it (one computed before, kept elsewhere); an
        object known already keeps its entry."""
        key, entries = id(obj), self._entries
        entry = entries.get(key)
        if entry is not None and entry[0]() is obj:
            return
        entries[key] = (weakref.ref(obj, lambda _ref: entries.pop(key, None)), value)

    def __len__(self) -> int:
        return len(self._entries)
