"""harness.tokens: parts + framing = the request, each provider's framing rules, the estimate
fallback, the caches and the totals."""

from __future__ import annotations

import gc
import json

import ctok
import pytest

from bench import estimator_samples as samples
from bench import tool_samples
from harness.messages import Message, Request, TextBlock, ToolDef, ToolResultBlock, ToolUseBlock
from harness.tokens import counts, estimator, tokenizers
from harness.tokens.base import (
    ESTIMATE,
    FamilyTokenizer,
    Framing,
    HistoryTotal,
)
from harness.tokens.tokenizers import tokenizer_for


def a_request() -> Request:
    """System blocks, tools, tool calls and results, several blocks a message, unicode."""
    tools = (
        ToolDef(name="read_file", description="Read a file; returns its text.",
                input_schema={"type": "object", "properties": {"path": {"type": "string"}},
                              "required": ["path"]}),
        tool_samples.TOOL_SCHEMAS[0],
    )
    messages = (
        Message.user("Đọc tệp README và tóm tắt nó, làm ơn. 请用中文回答。"),
        Message(role="assistant", content=(
            TextBlock(text="I'll read both files."),
            ToolUseBlock(id="toolu_01A", name="read_file", input={"path": "README.md"}),
            ToolUseBlock(id="toolu_01B", name="read_file", input={"path": "docs/ý tưởng.md"}),
        )),
        Message(role="user", content=(
            ToolResultBlock(tool_use_id="toolu_01A", content="# hango\n\nAn agent harness."),
            ToolResultBlock(tool_use_id="toolu_01B", content="missing", is_error=True),
        )),
        Message(role="user", content=(TextBlock(text="Also: "), TextBlock(text="🙂 thanks"))),
        Message(role="assistant", content=(TextBlock(text="hango 是一个智能体框架。"),)),
    )
    system = (TextBlock(text="You are a careful assistant."), TextBlock(text="Todo: none."),
              TextBlock(text=samples.PROSE[0]))
    return Request(model="m", system=system, messages=messages, tools=tools)


ALL = [tokenizers._profile(p) for p in tokenizers.PROFILES] + [ESTIMATE]


@pytest.mark.parametrize("tokenizer", ALL, ids=lambda t: repr(t))
def test_a_request_is_exactly_its_parts_plus_its_framing(tokenizer):
    request = a_request()
    parts = (sum(tokenizer.block(b) for b in request.system)
             + sum(tokenizer.tool(t) for t in request.tools)
             + sum(tokenizer.message(m) for m in request.messages))
    assert tokenizer.request(request) == parts + tokenizer.framing(request)
    assert tokenizer.framing(request) > 0
    for message in request.messages:
        assert tokenizer.message(message) == sum(tokenizer.block(b) for b in message.content)
    use = request.messages[1].content[1]
    assert tokenizer.block(use) == (tokenizer.text("toolu_01A") + tokenizer.text("read_file")
                                    + tokenizer.text(json.dumps({"path": "README.md"})))
    tool = request.tools[0]
    if tokenizer.name in tokenizers.OPENAI_ENCODINGS:  # the namespace OpenAI renders, by rule
        assert tokenizer.tool(tool) == (tokenizer.text("read_file:Read a file; returns its text")
                                        + 3 + 3 + tokenizer.text("path:string:"))
    else:
        assert tokenizer.tool(tool) == (tokenizer.text(tool.name) + tokenizer.text(
            tool.description) + tokenizer.text(json.dumps(tool.input_schema)))


def test_openai_counts_a_tool_by_the_published_rule_for_its_rendering():
    gpt = tokenizer_for("openai:gpt-4o")
    weather = ToolDef(  # the cookbook's example, with an enum, and a nested object added
        name="get_current_weather", description="Get the current weather in a given location.",
        input_schema={"type": "object", "properties": {
            "location": {"type": "string",
                         "description": "The city and state, e.g. San Francisco, CA"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            "at": {"type": "object", "properties": {"hour": {"type": "integer"}}}}})
    assert gpt.tool(weather) == (
        gpt.text("get_current_weather:Get the current weather in a given location")  # no "."
        + 3  # the properties
        + 3 + gpt.text("location:string:The city and state, e.g. San Francisco, CA")
        + 3 - 3 + (3 + gpt.text("celsius")) + (3 + gpt.text("fahrenheit"))
        + gpt.text("unit:string:")
        + 3 + gpt.text("at:object:") + gpt.text("hour:integer:"))  # nested: its line only
    bare = ToolDef(name="now", description="The time.", input_schema={"type": "object"})
    assert gpt.tool(bare) == gpt.text("now:The time")
    # 7 a function and 12 a request with tools (cl100k models: 10 and 12): framing.
    both = Request(model="m", tools=(weather, bare))
    assert gpt.framing(both) == 3 + 2 * 7 + 12
    assert tokenizer_for("openai:gpt-4").framing(both) == 3 + 2 * 10 + 12


def test_openai_framing_follows_the_wire_messages():
    gpt = tokenizer_for("openai:gpt-4o")
    request = a_request()
    # 3 priming; one system message (4, its three blocks joined at no cost); per tool 7 and 12
    # for the tools; user 4; assistant 4 + 2 calls × 3; two results × 4 and no user message
    # beside them; user 4; assistant 4.
    assert gpt.framing(request) == 3 + 4 + 2 * 7 + 12 + 4 + (4 + 2 * 3) + 2 * 4 + 4 + 4
    # One system and one user message: the cookbook's 3 + 3 per message + a token of role each.
    simple = Request(model="m", system=(TextBlock(text="Be brief."),),
                     messages=(Message.user("Hi"),))
    assert gpt.framing(simple) == 3 + 4 + 4


@pytest.mark.parametrize(("texts", "message_sent"), [
    ((), False), (("",), False), (("note",), True), (("", ""), True),
])
def test_results_beside_text_send_a_user_message_only_when_the_text_joins_to_something(
        texts, message_sent):
    # The OpenAI adapter joins a results message's text blocks with "\n\n" and sends a user
    # message beside the tool messages only when that join is not empty.
    framing = Framing(message=4, join=1, tool_result=4, results_are_messages=True)
    results = (ToolResultBlock(tool_use_id="c1", content="42"),)
    message = Message(role="user", content=tuple(TextBlock(text=t) for t in texts) + results)
    joins = max(0, len(texts) - 1)
    assert framing.of_message(message) == joins + 4 + (4 if message_sent else 0)
    # Without results, every message is sent.
    alone = Message(role="user", content=tuple(TextBlock(text=t) for t in texts))
    assert Framing(message=4, join=1).of_message(alone) == joins + 4


@pytest.mark.parametrize("model", ["openai:gpt-4o", "openai:gpt-4"])
def test_openai_counts_a_failed_result_as_the_wire_marks_it(model):
    tokenizer = tokenizer_for(model)
    failed = ToolResultBlock(tool_use_id="call_1", content="no such file", is_error=True)
    marked = ToolResultBlock(tool_use_id="call_1", content="Error: no such file")
    assert tokenizer.block(failed) == tokenizer.block(marked) > tokenizer.block(
        ToolResultBlock(tool_use_id="call_1", content="no such file"))
    # Claude's wire carries the flag: its content is counted as it is.
    claude = tokenizer_for("anthropic:claude-sonnet-4-5")
    assert claude.block(failed) == claude.block(
        ToolResultBlock(tool_use_id="call_1", content="no such file"))


def test_claude_framing_is_derived_as_documented():
    claude = tokenizer_for("anthropic:claude-sonnet-4-5")
    request = a_request()
    # request 3; system 0 + 2 joins; preamble 346; each message 4; one join in the 4th message;
    # 2 calls × 20; 2 results × 19.
    assert claude.framing(request) == 3 + 2 + 346 + 5 * 4 + 1 + 2 * 20 + 2 * 19
    # Anthropic's token-counting example: system "You are a scientist", one user message
    # "Hello, Claude": 14 input tokens.
    example = Request(model="m", system=(TextBlock(text="You are a scientist"),),
                      messages=(Message.user("Hello, Claude"),))
    assert claude.request(example) == 14
    # One message pays ctok's frame; the tool markup costs what ctok counts for it.
    for model, version in (("anthropic:claude-3-5-sonnet", "3.0"),
                           ("anthropic:claude-opus-4-7", "4.7"),
                           ("anthropic:claude-opus-4-8", "4.8")):
        tokenizer = tokenizer_for(model)
        one = Request(model="m", messages=(Message.user("hello, world"),))
        assert tokenizer.request(one) == ctok.token_count("hello, world", version)
        assert isinstance(tokenizer, FamilyTokenizer)
        costs = tokenizer.framing_costs
        assert costs.tool_use == tokenizer.text(
            '<function_calls>\n<invoke name="">\n</invoke>\n</function_calls>')
        assert costs.tool_result == tokenizer.text(
            "<function_results>\n<result>\n</result>\n</function_results>")


@pytest.mark.parametrize("model", ["scripted:demo", "openai:llama-3.1-70b", "nobody:knows"])
def test_where_no_tokenizer_fits_the_estimator_counts(model):
    tokenizer = tokenizer_for(model)
    assert tokenizer is ESTIMATE and tokenizer.source == "estimate"
    assert tokenizer.text(samples.PROSE[1]) == estimator.estimate_text(samples.PROSE[1])
    request = a_request()
    for message in request.messages:
        assert tokenizer.message_framing(message) == (
            estimator.MESSAGE_OVERHEAD + estimator.BLOCK_OVERHEAD * len(message.content))


class Recorder:
    """A text counter that records what it is asked to count."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def __call__(self, text: str) -> int:
        self.texts.append(text)
        return len(text.split())


def recording(size: int = 1000) -> tuple[FamilyTokenizer, Recorder]:
    recorder = Recorder()
    content = counts.EncodingCounts(recorder, cache_size=size)
    return FamilyTokenizer(name="recorded", content=content, framing=Framing(message=1)), recorder


def test_a_message_is_counted_once_however_often_it_is_asked(monkeypatch):
    tokenizer, _ = recording()
    counted: list[Message] = []
    original = counts.EncodingCounts._message
    monkeypatch.setattr(counts.EncodingCounts, "_message",
                        lambda self, m: counted.append(m) or original(self, m))
    history: list[Message] = [Message.user("start")]
    for turn in range(30):
        tokenizer.request(Request(model="m", messages=tuple(history)))
        history.append(Message(role="assistant", content=(
            ToolUseBlock(id=f"t{turn}", name="echo", input={"n": turn}),)))
        history.append(Message(role="user", content=(
            ToolResultBlock(tool_use_id=f"t{turn}", content=str(turn)),)))
    tokenizer.request(Request(model="m", messages=tuple(history)))
    assert len(counted) == len({id(m) for m in counted}) == len(history) == 61


def test_a_tool_is_counted_once_too(monkeypatch):
    tool = ToolDef(name="lookup", description="Look up a word.", input_schema={"type": "object"})
    value = ESTIMATE.tool(tool)
    monkeypatch.setattr(ESTIMATE._content, "_tool", lambda t: pytest.fail("counted twice"))
    assert ESTIMATE.tool(tool) == value


def test_a_fresh_equal_message_is_served_by_the_content_cache():
    tokenizer, recorder = recording()
    long_text = "word " * 300  # past the by-value limit: keyed by its digest
    first = Message(role="user", content=(TextBlock(text="short text"),
                                          TextBlock(text=long_text)))
    value = tokenizer.message(first)
    asked = len(recorder.texts)
    # A state rebuilt from the database: equal messages, new objects.
    again = Message(role="user", content=(TextBlock(text="short " + "text"),
                                          TextBlock(text="word " * 300)))
    assert again is not first and tokenizer.message(again) == value
    assert len(recorder.texts) == asked
    keys = list(tokenizer._content.text._entries)
    assert "short text" in keys and long_text not in keys  # the long one is held by digest
    assert any(isinstance(k, bytes) for k in keys)


def test_the_content_cache_is_bounded_and_forgets_the_least_recent():
    tokenizer, recorder = recording(size=2)
    for text in ("a", "b", "a", "c"):  # "a" used again, so "b" is the oldest when "c" comes
        tokenizer.text(text)
    assert len(tokenizer._content.text) == 2
    tokenizer.text("a")
    tokenizer.text("b")
    assert recorder.texts == ["a", "b", "c", "b"]


def test_the_caches_keep_no_message_alive():
    tokenizer, _ = recording()
    message = Message.user("gone soon")
    tokenizer.message(message)
    key = id(message)
    assert key in tokenizer._content.messages._entries
    del message
    gc.collect()
    assert key not in tokenizer._content.messages._entries


def test_a_real_tokenizer_counts_a_rebuilt_history_from_its_cache():
    claude = tokenizer_for("anthropic:claude-sonnet-4-5")
    assert isinstance(claude, FamilyTokenizer)
    request = a_request()
    total = claude.request(request)
    misses = claude._content.text.misses
    rebuilt = Request(model="m", system=request.system, tools=request.tools,
                      messages=tuple(Message(role=m.role, content=m.content, seq=i)
                                     for i, m in enumerate(request.messages)))
    assert claude.request(rebuilt) == total
    assert claude._content.text.misses == misses


@pytest.mark.parametrize("model", ["openai:gpt-4o", "scripted:demo"])
def test_a_growing_history_costs_only_its_new_messages(monkeypatch, model):
    tokenizer = tokenizer_for(model)
    history = [Message.user(f"message {i}") for i in range(20)]
    total = HistoryTotal(tokenizer)

    def whole(messages: list[Message]) -> int:
        return sum(tokenizer.message(m) + tokenizer.message_framing(m) for m in messages)

    assert total(history) == whole(history)
    request = Request(model="m", messages=tuple(history))
    assert total(history) == tokenizer.request(request) - tokenizer.framing(Request(model="m"))
    grown = history + [Message.user("one more"), Message.user("and another")]
    expected = whole(grown)
    looked_up: list[Message] = []
    original = tokenizer.message
    monkeypatch.setattr(tokenizer, "message", lambda m: looked_up.append(m) or original(m))
    assert total(tuple(grown)) == expected
    assert looked_up == grown[-2:]
    changed = [Message.user("replaced"), *grown[1:]]  # not an extension: counted afresh
    assert total(changed) == whole(changed)
    assert total(history[:5]) == whole(history[:5])

