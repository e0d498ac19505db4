"""harness.tools.registry: unique names, the registry view, the built-in tools' order."""

from __future__ import annotations

import pytest

from harness.errors import ConfigurationError
from harness.tools import ToolRegistry, builtin_registry
from tests.support.harness import make_tool


def test_registry_rejects_duplicate_names():
    registry = ToolRegistry([make_tool("a")])
    with pytest.raises(ConfigurationError, match="registered twice"):
        registry.register(make_tool("a"))
    with pytest.raises(ConfigurationError):
        ToolRegistry([make_tool("b"), make_tool("b")])


def test_view_none_is_every_tool_and_a_list_filters_in_registration_order():
    a, b, c = make_tool("a"), make_tool("b"), make_tool("c")
    registry = ToolRegistry([a, b, c])
    assert registry.view(None) == [a, b, c]
    assert registry.view(["c", "a", "unknown"]) == [a, c]
    assert registry.view([]) == []
    assert registry.get("b") is b and registry.get("zzz") is None
    assert registry.names() == ["a", "b", "c"]


def test_builtin_registry_order():
    assert builtin_registry().names() == ["echo", "word_count"]
