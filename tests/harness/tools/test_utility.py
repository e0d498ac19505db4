"""harness.tools.utility: the built-in echo and word_count tools."""

from __future__ import annotations

import pytest

from harness.tools import ToolResult, builtin_registry
from tests.support.harness import tool_context


@pytest.mark.parametrize(("name", "args", "expected"), [
    ("echo", {"text": "same text"}, "same text"),
    ("word_count", {"text": "  three  little words "}, "3"),
    ("word_count", {"text": ""}, "0"),
])
def test_builtin_tools(name, args, expected):
    tool = builtin_registry().get(name)
    assert tool.run(args, tool_context()) == ToolResult(content=expected)
