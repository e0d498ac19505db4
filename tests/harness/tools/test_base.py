"""harness.tools.base: schemas checked at construction (once, in a bounded memo), failures become
results, arguments validated before the call with no schema fetched, the definition the model
sees."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from harness.errors import ConfigurationError
from harness.messages import ToolDef
from harness.tools import ToolResult, base
from tests.support.harness import TEXT_SCHEMA, CountingTool, make_tool, tool_context


@pytest.mark.parametrize("schema", [
    {"type": "nope"},
    {"type": "object", "properties": {"x": {"type": 3}}},
    {"type": "object", "required": "x"},
])
def test_an_invalid_schema_is_a_configuration_error(schema):
    with pytest.raises(ConfigurationError, match="invalid schema"):
        make_tool(schema=schema)


def test_a_schema_nested_too_deeply_is_a_configuration_error():
    # An MCP server's schema: the checker would exhaust the stack (a run's and the inspector's).
    schema: dict = {"type": "object"}
    for _ in range(150):
        schema = {"type": "object", "properties": {"a": schema}}
    with pytest.raises(ConfigurationError, match="nested too deeply"):
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


def test_a_schema_reference_elsewhere_is_never_fetched():
    """An MCP server's schema could name any address: hango asks none of them."""
    asked: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            asked.append(self.path)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(json.dumps({"type": "string"}).encode())

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        elsewhere = f"http://127.0.0.1:{server.server_port}/name.json"
        tool = make_tool(schema={"type": "object", "properties": {
            "name": {"$ref": elsewhere}, "kind": {"$ref": "#/$defs/kind"}},
            "$defs": {"kind": {"enum": ["a", "b"]}}})
        result = tool.run({"name": "x"}, tool_context())
    finally:
        server.shutdown()
        server.server_close()
    assert asked == []
    assert result.is_error and f"refers to {elsewhere!r}" in result.content
    assert tool.argument_problems({"kind": "c"}) == ["kind: 'c' is not one of ['a', 'b']"]


def test_the_memo_of_checked_schemas_is_bounded(monkeypatch):
    monkeypatch.setattr(base, "VALID_SCHEMAS_KEPT", 3)
    monkeypatch.setattr(base, "_valid_schemas", {})
    for i in range(5):
        make_tool(schema={"type": "object", "description": f"schema {i}"})
    assert len(base._valid_schemas) == 3
    assert '"schema 4"' in next(reversed(base._valid_schemas))
