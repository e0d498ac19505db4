"""Token counts for the parts of a model request, from the model family's own tokenizer.

One interface, :class:`Tokenizer`, counts a text, a block, a message and a tool definition —
content only — and, separately, the **framing** a provider adds around them (role markers, the
system message's frame, a tool's wrapper, the tool-use system prompt). ``request()`` is exactly
the parts plus the framing, so a caller listing parts (the context inspector) shows framing as a
line of its own and the lines sum to the total.
:mod:`harness.tokens.tokenizers` says which tokenizer counts which model, with what framing.

Where no tokenizer fits, :data:`ESTIMATE` counts with :mod:`harness.tokens.estimator`, its
overheads (:data:`~harness.tokens.estimator.MESSAGE_OVERHEAD` and the others) as the framing.
Counting knows no provider (the scripted one reports its usage with :data:`ESTIMATE`): a
provider's own count endpoint is asked by :func:`harness.providers.counting.count_request`.

Counting must be cheap: summarization counts every request, and the scripted model reports
every call's usage. Each tokenizer counts content through one cached
:class:`~harness.tokens.counts.EncodingCounts` (:mod:`harness.tokens.counts` says how it caches),
and :class:`HistoryTotal` adds a growing history's new messages only.
"""

from __future__ import annotations

import operator
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from harness.messages import (
    Block,
    ImageBlock,
    Message,
    Request,
    TextBlock,
    ToolDef,
    ToolUseBlock,
)
from harness.tokens import estimator
from harness.tokens.counts import EncodingCounts

# How a count was made: the provider's count endpoint; the family's tokenizer over the exact
# text; a published rule (OpenAI's function rendering and message framing); an estimate (the
# estimator, or a tokenizer over a form the provider renders differently: Claude's tools); or
# a team's own server, by its dialect's endpoints (harness.providers.served_count).
Counted = Literal["provider", "tokenizer", "rule", "estimate", "vllm", "llama.cpp",
                  "llama-cpp-python"]


class Tokenizer(Protocol):
    """Counts for one model family. Not :class:`harness.providers.base.TokenCounter`, which is
    a provider's count endpoint; this one works offline."""

    name: str        # "o200k_base", "cl100k_base", "claude-v3", "claude-v4.7", "estimate"…
    source: Counted  # texts: "tokenizer" or "estimate"
    tool_source: Counted     # tool definitions: "rule", "estimate"…
    framing_source: Counted  # the framing

    def text(self, text: str) -> int: ...

    def block(self, block: Block) -> int:
        """A block's content only: text; tool_use id, name, JSON input; tool_result id,
        content and images."""
        ...

    def image(self, image: ImageBlock) -> int:
        """A tool result's image as the wire carries it (0 where it is sent as text, which
        :meth:`block` counts)."""
        ...

    def message(self, message: Message) -> int:
        """The sum of its blocks' content."""
        ...

    def tool(self, tool: ToolDef) -> int:
        """Name, description and JSON schema."""
        ...

    def message_framing(self, message: Message) -> int:
        """What one message adds around its content, wherever it sits."""
        ...

    def framing(self, request: Request) -> int:
        """Everything the provider adds around the parts: the request's own, the system
        prompt's, the tools' (the tool-use preamble included) and each message's."""
        ...

    def request(self, request: Request) -> int:
        """Exactly the system blocks + the tools + the messages + ``framing(request)``."""
        ...

    @property
    def counts_key(self) -> str | None:
        """Names exactly how :meth:`message` counts (the encoding, its package's version, the
        counting rules): a message's count stored under this key is this tokenizer's count of
        it. None: not worth storing (the estimate)."""
        ...

    def remember(self, message: Message, tokens: int) -> None:
        """``message``'s :meth:`message` count, known from where it was stored."""
        ...


@dataclass(frozen=True, kw_only=True)
class Framing:
    """What a model's API adds around a request's parts, in tokens (where each number comes
    from: the module docstring)."""

    request: int = 0      # once per request
    system: int = 0       # once when there is a system prompt
    message: int = 0      # per message
    join: int = 0         # per text block after the first, in the system prompt or a message
    tool_use: int = 0     # per tool call
    tool_result: int = 0  # per tool result
    # OpenAI: a tool result is a message of its own, and a user message holding only results
    # sends no message besides them.
    results_are_messages: bool = False
    tool: int = 0         # per tool definition
    tools: int = 0        # once when tools are offered: the tool-use system prompt

    def of_message(self, message: Message) -> int:
        texts = uses = results = 0
        text_sent = False
        for block in message.content:  # one pass: a history's every message comes here
            if isinstance(block, TextBlock):
                texts += 1
                text_sent = text_sent or texts > 1 or bool(block.text)
            elif isinstance(block, ToolUseBlock):
                uses += 1
            else:
                results += 1
        tokens = (self.join * max(0, texts - 1) + self.tool_use * uses
                  + self.tool_result * results)
        # The adapter joins text blocks with "\n\n" and sends a user message beside the
        # results only when that join is not empty.
        if not (self.results_are_messages and results and not text_sent):
            tokens += self.message
        return tokens

    def of_request(self, request: Request) -> int:
        """The framing that does not belong to a message."""
        system = self.system + self.join * (len(request.system) - 1) if request.system else 0
        tools = self.tools + self.tool * len(request.tools) if request.tools else 0
        return self.request + system + tools


class ContentCounts(ABC):
    """The content half of a :class:`Tokenizer`, through one cached :class:`EncodingCounts`; the
    framing half is the subclass's."""

    _content: EncodingCounts

    def text(self, text: str) -> int:
        return self._content.text(text)

    def block(self, block: Block) -> int:
        return self._content.block(block)

    def image(self, image: ImageBlock) -> int:
        return self._content.image(image)

    def message(self, message: Message) -> int:
        return self._content.message(message)

    def tool(self, tool: ToolDef) -> int:
        return self._content.tool(tool)

    @property
    def counts_key(self) -> str | None:
        return self._content.key

    def remember(self, message: Message, tokens: int) -> None:
        self._content.messages.put(message, tokens)

    @abstractmethod
    def framing(self, request: Request) -> int: ...

    def request(self, request: Request) -> int:
        return (sum(self.block(b) for b in request.system)
                + sum(self.tool(tool) for tool in request.tools)
                + sum(self.message(m) for m in request.messages) + self.framing(request))


class FamilyTokenizer(ContentCounts):
    """A model family's encoding with one model's framing."""

    source: Counted = "tokenizer"

    def __init__(self, *, name: str, content: EncodingCounts, framing: Framing,
                 tool_source: Counted = "estimate", framing_source: Counted = "estimate",
                 ) -> None:
        self.name, self._content, self.framing_costs = name, content, framing
        self.tool_source, self.framing_source = tool_source, framing_source

    def message_framing(self, message: Message) -> int:
        return self.framing_costs.of_message(message)

    def framing(self, request: Request) -> int:
        return (self.framing_costs.of_request(request)
                + sum(self.framing_costs.of_message(m) for m in request.messages))

    def __repr__(self) -> str:
        return f"FamilyTokenizer({self.name!r}, {self.framing_costs})"


# -- the estimator, where no tokenizer fits ------------------------------------------------------


class Estimate(ContentCounts):
    """:mod:`harness.tokens.estimator` behind the same interface, its overheads as the framing.
    Its texts go through the same bounded content cache as a tokenizer's, so a state rebuilt
    from the database — the inspector's, every request — finds a long history counted
    already."""

    name = "estimate"
    source: Counted = "estimate"
    tool_source: Counted = "estimate"
    framing_source: Counted = "estimate"

    def __init__(self) -> None:
        self._content = EncodingCounts(estimator.estimate_text)

    def message_framing(self, message: Message) -> int:
        return estimator.MESSAGE_OVERHEAD + estimator.BLOCK_OVERHEAD * len(message.content)

    def framing(self, request: Request) -> int:
        return (estimator.BLOCK_OVERHEAD * len(request.system)
                + estimator.TOOL_OVERHEAD * len(request.tools)
                + sum(self.message_framing(m) for m in request.messages))

    def __repr__(self) -> str:
        return "Estimate()"


ESTIMATE = Estimate()


# -- totals ---------------------------------------------------------------------------------------


def messages_tokens(tokenizer: Tokenizer, messages: Iterable[Message]) -> int:
    """The messages' tokens, each with its framing."""
    return sum(tokenizer.message(m) + tokenizer.message_framing(m) for m in messages)


class HistoryTotal:
    """A growing history's tokens, framing included (a run's, turn after turn): when the
    messages start with those of the previous call — the same objects — only the new ones are
    counted, so a turn costs an identity check of the history instead of a cache lookup per
    message. Holds the last history it was given; keep one per run."""

    def __init__(self, tokenizer: Tokenizer) -> None:
        self.tokenizer = tokenizer
        self._messages: tuple[Message, ...] = ()
        self._total = 0

    def _count(self, messages: Sequence[Message]) -> int:
        return messages_tokens(self.tokenizer, messages)

    def __call__(self, messages: Sequence[Message]) -> int:
        seen = len(self._messages)
        if len(messages) >= seen and all(map(operator.is_, messages, self._messages)):
            total = self._total + self._count(messages[seen:])
        else:
            total = self._count(messages)
        self._messages, self._total = tuple(messages), total
        return total

