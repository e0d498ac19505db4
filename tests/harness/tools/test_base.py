"""harness.tools: schemas checked at construction, failures become results, the registry view."""

from __future__ import annotations

import pytest

from harness.errors import ConfigurationError
from harness.messages import ToolDef, ToolUseBlock
from harness.state import State
from harness.tools import Tool, ToolContext, ToolRegistry, ToolResult, builtin_registry
from tests.support.harness import TEXT_SCHEMA, CountingTool


def ctx() -> ToolContext:
    return ToolContext(state=State(), call=ToolUseBlock(id="t", name="x", input={}))


def make(name: str = "t", fn=lambda args, ctx: "ok", schema=None) -> Tool:
    return Tool(name=name, description=f"{name} tool", input_schema=schema or {"type": "object"},
                fn=fn)


@pytest.mark.parametrize("schema", [
    {"type": "nope"},
    {"type": "object", "properties": {"x": {"type": 3}}},
    {"type": "object", "required": "x"},
])
def test_an_invalid_schema_is_a_configuration_error(schema):
    with pytest.raises(ConfigurationError, match="invalid schema"):
        make(schema=schema)


def test_a_tool_that_raises_becomes_an_error_result():
    def broken(args, ctx):
        raise KeyError("missing")

    result = make("broken", broken).run({}, ctx())
    assert result == ToolResult(content="broken failed: KeyError: 'missing'", is_error=True)


def test_string_and_result_returns():
    assert make(fn=lambda a, c: "plain").run({}, ctx()) == ToolResult(content="plain")
    assert make(fn=lambda a, c: 42).run({}, ctx()) == ToolResult(content="42")
    custom = ToolResult(content="x", is_error=True)
    assert make(fn=lambda a, c: custom).run({}, ctx()) is custom


def test_arguments_are_validated_before_the_call():
    counter = CountingTool(schema=TEXT_SCHEMA)
    result = counter.tool.run({"text": ["a"]}, ctx())
    assert result.is_error and "text: ['a'] is not of type 'string'" in result.content
    assert counter.tool.argument_problems("not an object") == ["arguments must be a JSON object"]
    assert counter.calls == []
    assert counter.tool.run({"text": "a"}, ctx()) == ToolResult(content="counted")
    assert counter.calls == [{"text": "a"}]


def test_definition_is_what_the_model_sees():
    tool = make("echo", schema=TEXT_SCHEMA)
    assert tool.definition == ToolDef(name="echo", description="echo tool",
                                      input_schema=TEXT_SCHEMA)


def test_registry_rejects_duplicate_names():
    registry = ToolRegistry([make("a")])
    with pytest.raises(ConfigurationError, match="registered twice"):
        registry.register(make("a"))
    with pytest.raises(ConfigurationError):
        ToolRegistry([make("b"), make("b")])


def test_view_none_is_every_tool_and_a_list_filters_in_registration_order():
    a, b, c = make("a"), make("b"), make("c")
    registry = ToolRegistry([a, b, c])
    assert registry.view(None) == [a, b, c]
    assert registry.view(["c", "a", "unknown"]) == [a, c]
    assert registry.view([]) == []
    assert registry.get("b") is b and registry.get("zzz") is None
    assert registry.names() == ["a", "b", "c"]


@pytest.mark.parametrize(("name", "args", "expected"), [
    ("echo", {"text": "same text"}, "same text"),
    ("word_count", {"text": "  three  little words "}, "3"),
    ("word_count", {"text": ""}, "0"),
])
def test_builtin_tools(name, args, expected):
    tool = builtin_registry().get(name)
    assert tool.run(args, ctx()) == ToolResult(content=expected)


def test_builtin_registry_order():
    assert builtin_registry().names() == ["echo", "word_count"]
