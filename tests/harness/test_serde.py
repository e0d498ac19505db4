"""harness.serde: every block type round-trips (with and without cache_control); bad shapes fail."""

from __future__ import annotations

import json

import pytest

from harness.errors import InvalidContent
from harness.messages import CacheControl, Message, TextBlock, ToolResultBlock, ToolUseBlock
from harness.serde import (
    block_from_json,
    block_to_json,
    content_from_json,
    content_to_json,
    message_from_json,
    message_to_json,
)

CACHE = CacheControl()

BLOCKS = [
    TextBlock(text="hello"),
    TextBlock(text=""),
    TextBlock(text="cached", cache_control=CACHE),
    ToolUseBlock(id="toolu_1", name="echo", input={"text": "hi", "n": [1, {"x": None}]}),
    ToolUseBlock(id="toolu_2", name="echo", input={}, cache_control=CACHE),
    ToolResultBlock(tool_use_id="toolu_1", content="hi"),
    ToolResultBlock(tool_use_id="toolu_1", content="boom", is_error=True),
    ToolResultBlock(tool_use_id="toolu_2", content="", cache_control=CACHE),
]


@pytest.mark.parametrize("block", BLOCKS, ids=repr)
def test_block_round_trips_through_json_text(block):
    data = json.loads(json.dumps(block_to_json(block)))
    assert block_from_json(data) == block


@pytest.mark.parametrize(("block", "expected"), [
    (TextBlock(text="a"), {"type": "text", "text": "a"}),
    (ToolUseBlock(id="t", name="echo", input={"text": "a"}),
     {"type": "tool_use", "id": "t", "name": "echo", "input": {"text": "a"}}),
    (ToolResultBlock(tool_use_id="t", content="a", is_error=True),
     {"type": "tool_result", "tool_use_id": "t", "content": "a", "is_error": True}),
    (TextBlock(text="a", cache_control=CACHE),
     {"type": "text", "text": "a", "cache_control": {"type": "ephemeral"}}),
])
def test_block_json_shape_is_the_public_one(block, expected):
    assert block_to_json(block) == expected


def test_cache_control_is_omitted_when_absent():
    for block in BLOCKS:
        assert ("cache_control" in block_to_json(block)) == (block.cache_control is not None)


def test_tool_use_input_defaults_to_empty_object():
    assert block_from_json({"type": "tool_use", "id": "t", "name": "n"}).input == {}


def test_tool_result_is_error_defaults_to_false():
    block = block_from_json({"type": "tool_result", "tool_use_id": "t", "content": "ok"})
    assert block == ToolResultBlock(tool_use_id="t", content="ok", is_error=False)


@pytest.mark.parametrize("data", [
    "text",
    None,
    [],
    {},
    {"type": "image", "source": {}},
    {"type": "text"},
    {"type": "text", "text": 3},
    {"type": "tool_use", "id": "", "name": "echo", "input": {}},
    {"type": "tool_use", "id": "t", "input": {}},
    {"type": "tool_use", "id": "t", "name": "echo", "input": [1]},
    {"type": "tool_use", "id": "t", "name": "echo", "input": "{}"},
    {"type": "tool_result", "content": "x"},
    {"type": "tool_result", "tool_use_id": "t", "content": None},
    {"type": "tool_result", "tool_use_id": "t", "content": "x", "is_error": "yes"},
    # a breakpoint is {"type": "ephemeral"}: anything else was read as one
    {"type": "text", "text": "x", "cache_control": "yes"},
    {"type": "text", "text": "x", "cache_control": {"type": "forever"}},
    {"type": "tool_result", "tool_use_id": "t", "content": "x", "cache_control": 1},
])
def test_invalid_block_shapes_raise_invalid_content(data):
    with pytest.raises(InvalidContent):
        block_from_json(data)


def test_message_round_trip_keeps_role_and_block_order():
    message = Message(role="assistant", content=(
        TextBlock(text="Let me check."),
        ToolUseBlock(id="a", name="echo", input={"text": "x"}),
        ToolUseBlock(id="b", name="word_count", input={"text": "x y"}, cache_control=CACHE),
    ))
    data = json.loads(json.dumps(message_to_json(message)))
    assert data["role"] == "assistant"
    assert [b["type"] for b in data["content"]] == ["text", "tool_use", "tool_use"]
    assert message_from_json(data) == message


def test_content_round_trip():
    assert content_from_json(content_to_json(tuple(BLOCKS))) == tuple(BLOCKS)


@pytest.mark.parametrize("data", [
    None,
    "user",
    {"content": []},
    {"role": "system", "content": []},
    {"role": "user"},
    {"role": "user", "content": {"type": "text", "text": "x"}},
    {"role": "user", "content": [{"type": "text"}]},
])
def test_invalid_messages_raise_invalid_content(data):
    with pytest.raises(InvalidContent):
        message_from_json(data)
