"""A provider whose calls go out after the caller lets go of what it holds (a run's database
connection): before each call, whichever way it is made, and only when one is made."""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.messages import Message, Request, TextBlock
from harness.providers.base import StreamDone, Streaming, TextDelta, TokenCounter
from harness.providers.releasing import Releasing
from harness.providers.scripted import ScriptedModel, text


def request() -> Request:
    return Request(model="m", messages=(Message(role="user", content=(TextBlock(text="hi"),)),))


@dataclass
class Counting:
    """A provider that counts tokens (as Anthropic's does) and notes when it was called."""

    name: str = "counting"
    log: list[str] = field(default_factory=list)

    def complete(self, request: Request):
        self.log.append("complete")
        return text("done")

    def count_tokens(self, request: Request) -> int:
        self.log.append("count_tokens")
        return 7


def test_each_call_is_made_after_release_and_only_then():
    log: list[str] = []
    inner = ScriptedModel([text("one two"), text("three")])
    provider = Releasing(inner, lambda: log.append("release"))
    assert log == []  # wrapping releases nothing
    assert provider.complete(request()).message.text == "one two"
    assert log == ["release"]
    stream = provider.stream(request())
    assert log == ["release"]  # a stream's call goes out when it is read
    events = list(stream)
    assert log == ["release", "release"]
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["three"]
    assert isinstance(events[-1], StreamDone) and provider.name == inner.name


def test_it_streams_and_counts_exactly_when_the_provider_it_wraps_does():
    log: list[str] = []
    scripted = Releasing(ScriptedModel([]), lambda: log.append("release"))
    assert isinstance(scripted, Streaming) and not isinstance(scripted, TokenCounter)
    counting = Counting(log=log)
    wrapped = Releasing(counting, lambda: log.append("release"))
    assert isinstance(wrapped, TokenCounter) and not isinstance(wrapped, Streaming)
    assert wrapped.count_tokens(request()) == 7
    assert log == ["release", "count_tokens"]
