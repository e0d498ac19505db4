"""Small, side-effect-free utility tools (used by the demo agent and the benchmark workload)."""

from __future__ import annotations

from typing import Any

from harness.tools.base import Tool, ToolContext


def _echo(args: dict[str, Any], ctx: ToolContext) -> str:
    text: str = args["text"]  # the tool's schema makes it a string
    return text


def _word_count(args: dict[str, Any], ctx: ToolContext) -> str:
    return str(len(args["text"].split()))


ECHO = Tool(
    name="echo",
    description="Return the given text unchanged. Useful to restate or confirm a value.",
    input_schema={
        "type": "object",
        "properties": {"text": {"type": "string", "description": "The text to return."}},
        "required": ["text"],
        "additionalProperties": False,
    },
    fn=_echo,
)

WORD_COUNT = Tool(
    name="word_count",
    description="Count the whitespace-separated words in a text.",
    input_schema={
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
        "additionalProperties": False,
    },
    fn=_word_count,
)

TOOLS = (ECHO, WORD_COUNT)
