"""harness.tools.base: schemas checked at construction, failures become results, arguments
validated before the call, the definition the model sees."""

from __future__ import annotations

import pytest

from harness.errors import ConfigurationError
from harness.messages import ToolDef
from harness.tools import ToolResult
from tests.support.harness import TEXT_SCHEMA, CountingTool, make_tool, tool_context


@pytest.mark.parametrize("schema", [
    {"type": "nope"},
    {"type": "object", "properties": {"x": {"type": 3}}},
    {"type": "object", "required": "x"},
])
def test_an_invalid_schema_is_a_configuration_error(schema):
    with pytest.raises(ConfigurationError, match="invalid schema"):
        make_tool(schema=schema)


def test_a_tool_that_raises_becomes_an_error_result():
    def broken(args, ctx):
        raise KeyError("missing")

    result = make_tool("broken", broken).run({}, tool_context())
    assert result == ToolResult(content="broken failed: KeyError: 'missing'", is_error=True)


def test_string_and_result_returns():
    assert make_tool(fn=lambda a, c: "plain").run({}, tool_context()) == ToolResult(content="plain")
    assert make_tool(fn=lambda a, c: 42).run({}, tool_context()) == ToolResult(content="42")
    custom = ToolResult(content="x", is_error=True)
    assert make_tool(fn=lambda a, c: custom).run({}, tool_context()) is custom


def test_arguments_are_validated_before_the_call():
    counter = CountingTool(schema=TEXT_SCHEMA)
    result = counter.tool.run({"text": ["a"]}, tool_context())
    assert result.is_error and "text: ['a'] is not of type 'string'" in result.content
    assert counter.tool.argument_problems("not an object") == ["arguments must be a JSON object"]
    assert counter.calls == []
    assert counter.tool.run({"text": "a"}, tool_context()) == ToolResult(content="counted")
    assert counter.calls == [{"text": "a"}]


def test_definition_is_what_the_model_sees():
    tool = make_tool("echo", schema=TEXT_SCHEMA)
    assert tool.definition == ToolDef(name="echo", description="echo tool",
                                      input_schema=TEXT_SCHEMA)
