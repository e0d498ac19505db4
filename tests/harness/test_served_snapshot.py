"""harness.served_snapshot: which parts a server's templated prompt lacks, and the parts counted
by a server's text endpoint (over a loopback server: tests/support/model_servers.py)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from harness import served_snapshot
from harness.context import SourcedBlock
from harness.messages import Message, Request, TextBlock, ToolResultBlock, ToolUseBlock
from harness.providers import served_count
from harness.serde import json_text
from harness.served_snapshot import ServedTokenizer, dropped_parts
from harness.tokens.base import ESTIMATE
from tests.support.model_servers import ModelServer


def request(*messages: Message, system: str = "Be brief.", tools: tuple[str, ...] = ("echo",)):
    """The fields of a ModelRequest dropped_parts reads (each tool described as "Does <name>.")."""
    return SimpleNamespace(
        system=(SourcedBlock(part="system:agent", block=TextBlock(text=system)),),
        tools=tuple(SimpleNamespace(name=name, description=f"Does {name}.") for name in tools),
        request=Request(model="m", messages=messages, max_tokens=10))


def test_a_part_whose_text_is_not_in_the_prompt_was_dropped():
    asked = Message(role="user", content=(TextBlock(text='Say  "hi"\nto   me'),), seq=1)
    called = Message(role="assistant", content=(
        ToolUseBlock(id="c1", name="word_count", input={"text": "x"}),), seq=2)
    answered = Message(role="user", content=(
        ToolResultBlock(tool_use_id="c1", content="1 word"),), seq=3)
    sent = request(asked, called, answered, tools=("echo", "word_count"))

    # Whitespace folded, JSON-escaped: still found.
    prompt = 'user: Say \\"hi\\" to me\nmodel: word_count(...)\ntool: 1 word\n'
    assert dropped_parts(prompt, sent) == {"system:agent", "tool:echo", "tool:word_count"}
    described = "echo: Does echo.\nword_count: Does word_count.\n"
    assert dropped_parts("Be brief. " + described + prompt, sent) == frozenset()
    # The history names word_count; without its definition, the tool was still dropped.
    assert dropped_parts("Be brief. echo: Does echo. " + prompt, sent) == {"tool:word_count"}
    assert dropped_parts("", sent) == {"system:agent", "tool:echo", "tool:word_count",
                                       "message:1", "message:2", "message:3"}


def test_a_text_a_template_wrote_as_json_is_found():
    said = request(Message(role="user", seq=1, content=(TextBlock(text='Say "hi", café'),)))
    for prompt in (json_text({"text": 'Say "hi", café'}), json.dumps('Say "hi", café')):
        assert dropped_parts(prompt, said) == {"system:agent", "tool:echo"}


@pytest.fixture
def server():
    served_snapshot.forget()
    model_server = ModelServer("llama-cpp-python")
    yield model_server
    model_server.close()
    served_snapshot.forget()


def test_the_servers_tokenizer_counts_each_text_once(server):
    counter = served_count.detected(server.base_url, "served-model")
    assert counter is not None
    tokenizer = ServedTokenizer(counter, ESTIMATE)
    message = Message(role="user", content=(TextBlock(text="one two three"),))

    assert tokenizer.message(message) == 3
    assert (tokenizer.source, tokenizer.framing_source) == ("llama-cpp-python", "estimate")
    asked = len(server.to("/extras/tokenize/count"))
    assert ServedTokenizer(counter, ESTIMATE).text("one two three") == 3  # remembered
    assert len(server.to("/extras/tokenize/count")) == asked
    assert tokenizer.framing(Request(model="m", messages=(message,), max_tokens=1)) == \
        ESTIMATE.framing(Request(model="m", messages=(message,), max_tokens=1))


def test_past_its_asks_an_inspection_stops_asking(server, monkeypatch):
    counter = served_count.detected(server.base_url, "served-model")
    assert counter is not None
    monkeypatch.setattr(served_snapshot, "MAX_ASKS", 2)
    tokenizer = ServedTokenizer(counter, ESTIMATE)
    assert tokenizer.text("a") + tokenizer.text("b") == 2
    with pytest.raises(served_count.ServerCountError, match="asked 2 texts"):
        tokenizer.text("c")


def test_a_slow_server_is_asked_for_so_long(server, monkeypatch):
    counter = served_count.detected(server.base_url, "served-model")
    assert counter is not None
    monkeypatch.setattr(served_snapshot, "ASK_SECONDS", 0.0)
    tokenizer = ServedTokenizer(counter, ESTIMATE)
    assert tokenizer.text("first") == 1  # the first ask starts the clock
    with pytest.raises(served_count.ServerCountError, match="took over 0 s"):
        tokenizer.text("second")
