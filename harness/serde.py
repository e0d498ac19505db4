"""The one place harness values become JSON and back (stored messages, state_json, events).

The JSON block shapes are the public API's: ``{"type":"text","text"}``,
``{"type":"tool_use","id","name","input"}``, ``{"type":"tool_result","tool_use_id","content",
"is_error"}``, each with an optional ``cache_control``.
"""

from __future__ import annotations

import json
from typing import Any, assert_never

from harness.errors import InvalidContent
from harness.messages import (
    Block,
    CacheControl,
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)

JSON = dict[str, Any]

# The keys each block type's JSON has; a reader of outside JSON (the API) refuses any other.
BLOCK_FIELDS: dict[str, frozenset[str]] = {
    "text": frozenset({"type", "text", "cache_control"}),
    "tool_use": frozenset({"type", "id", "name", "input", "cache_control"}),
    "tool_result": frozenset({"type", "tool_use_id", "content", "is_error", "cache_control"}),
}

# A JSON value as text the way a model reads it (tool inputs and schemas; previews): non-ASCII
# kept, anything else as str. One encoder: ``json.dumps`` with arguments builds a new one per
# call, which is most of the time for a small tool input.
json_text = json.JSONEncoder(ensure_ascii=False, default=str).encode


def block_to_json(block: Block) -> JSON:
    match block:
        case TextBlock():
            out: JSON = {"type": "text", "text": block.text}
        case ToolUseBlock():
            out = {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
        case ToolResultBlock():
            out = {
                "type": "tool_result",
                "tool_use_id": block.tool_use_id,
                "content": block.content,
                "is_error": block.is_error,
            }
        case _:
            assert_never(block)
    if block.cache_control is not None:
        out["cache_control"] = {"type": block.cache_control.type}
    return out


def _str(data: JSON, key: str, *, allow_empty: bool = True) -> str:
    value = data.get(key)
    if not isinstance(value, str) or (not allow_empty and not value):
        raise InvalidContent(f"{data.get('type')} block needs a string {key!r}")
    return value


def _cache_control(data: Any) -> CacheControl | None:
    if data is None:
        return None
    if data != {"type": "ephemeral"}:
        raise InvalidContent("'cache_control' must be {\"type\": \"ephemeral\"} or absent")
    return CacheControl()


def block_from_json(data: Any) -> Block:
    if not isinstance(data, dict):
        raise InvalidContent("a content block must be an object")
    cache = _cache_control(data.get("cache_control"))
    match data.get("type"):
        case "text":
            return TextBlock(text=_str(data, "text"), cache_control=cache)
        case "tool_use":
            args = data.get("input", {})
            if not isinstance(args, dict):
                raise InvalidContent("tool_use block needs an object 'input'")
            return ToolUseBlock(
                id=_str(data, "id", allow_empty=False),
                name=_str(data, "name", allow_empty=False),
                input=args,
                cache_control=cache,
            )
        case "tool_result":
            is_error = data.get("is_error", False)
            if not isinstance(is_error, bool):
                raise InvalidContent("tool_result 'is_error' must be a boolean")
            return ToolResultBlock(
                tool_use_id=_str(data, "tool_use_id", allow_empty=False),
                content=_str(data, "content"),
                is_error=is_error,
                cache_control=cache,
            )
        case other:
            raise InvalidContent(f"unknown block type {other!r}")


def content_to_json(content: tuple[Block, ...]) -> list[JSON]:
    return [block_to_json(b) for b in content]


def content_from_json(data: Any) -> tuple[Block, ...]:
    if not isinstance(data, list):
        raise InvalidContent("content must be a list of blocks")
    return tuple(block_from_json(b) for b in data)


def message_to_json(message: Message) -> JSON:
    return {"role": message.role, "content": content_to_json(message.content)}


def message_from_json(data: Any) -> Message:
    if not isinstance(data, dict) or data.get("role") not in ("user", "assistant"):
        raise InvalidContent("a message needs role 'user' or 'assistant'")
    return Message(role=data["role"], content=content_from_json(data.get("content")))
