"""Token counts for the parts of a model request, from the model family's own tokenizer.

One interface, :class:`Tokenizer`, counts a text, a block, a message and a tool definition —
content only — and, separately, the **framing** a provider adds around them (role markers, the
system message's frame, a tool's wrapper, the tool-use system prompt). ``request()`` is exactly
the parts plus the framing, so a caller listing parts (the context inspector) shows framing as a
line of its own and the lines sum to the total. :func:`tokenizer_for` picks the tokenizer for a
``<provider>:<model>`` string by longest prefix, like :mod:`harness.providers.models`:

================ ============================================ ==================================
tokenizer        models                                       counted with
================ ============================================ ==================================
``o200k_base``   gpt-4o*, gpt-4.1*, gpt-4.5*, gpt-5*, o1*,    quicktok-v1 (vocabulary in the
                 o3*, o4*, chatgpt-4o*, gpt-oss*              wheel, byte-identical to OpenAI's)
``cl100k_base``  gpt-4, gpt-4-turbo*, gpt-3.5*                the same
``claude-v3``    claude-3*, claude-{opus,sonnet,haiku}-4*     ctok, family v3
                 (Claude 3 through Opus 4.6)
``claude-v4.7``  claude-opus-4-7*                             ctok, family v4.7
``claude-v4.8``  claude-opus-4-8*, claude-{opus,sonnet,       ctok, family v4.8 (v4.7's
                 fable}-5*                                    vocabulary, a six-token frame)
``estimate``     scripted:*, unknown models, OpenAI-          :mod:`harness.estimator`
                 compatible servers running other models
================ ============================================ ==================================

ctok's families follow its README's version table ([3.0, 4.7) → v3, [4.7, 4.8) → v4.7, ≥ 4.8 →
v4.8). A text's count is ctok's single-message count less that message's frame. Both packages
read their data from their own install directory: nothing is downloaded, nothing is written.

Where each framing number comes from (tokens; *measured* numbers were checked against a
provider's count, *documented* ones are the provider's own, *estimates* are reasoned, not
measured — no offline tokenizer knows how a provider renders a request):

OpenAI (chat completions, as :mod:`harness.providers.openai_compat` sends them)
  * 3 per request, the reply's priming ``<|start|>assistant<|message|>`` — documented (OpenAI
    cookbook, "How to count tokens with tiktoken");
  * 4 per message, system message included: the cookbook's 3 per message plus the role, one token
    in both encodings. A tool result is a message of its own (role ``tool``), so it costs 4 and a
    user message holding only results adds no message of its own — documented;
  * 19 per tool with o200k (the cookbook's ``func_init`` 7 + ``func_end`` 12 for gpt-4o), 22
    with cl100k (10 + 12) — documented. The cookbook prices a schema as OpenAI renders it (a
    compact TypeScript-like form), which is smaller than the JSON counted here as the tool's
    content, so a tool part reads high;
  * 3 per tool call — estimate (each call is its own assistant segment naming the function; the
    call id, counted here as content, is likely never shown to the model);
  * 0 per ``"\\n\\n"`` joining text blocks — measured: it mostly merges with the text around it
    (+0.20 on average, ``bench/bench_tokens.py``).

Claude (Messages API)
  * the single-message frame ctok measured against ``count_tokens``: 7 (v3), 11 (v4.7), 6
    (v4.8). It pays one turn and the assistant prompt, so a message costs about half of it — 4,
    6, 3 — and a request the rest — 3, 5, 3. The split is an estimate: ctok counts the legacy
    turn markers ``"\\n\\nHuman:"`` and ``"\\n\\nAssistant:"`` at 4 + 4 (v3) and 5 + 7 (v4.7);
  * 0 for the system prompt — measured: Anthropic's documented example (system "You are a
    scientist", user "Hello, Claude": 14 tokens) is 7 + 4 + 3 with ctok's part counts;
  * the tool-use system prompt, once when tools are offered: 346 for Claude 3.5 Sonnet and
    later, 530 Claude 3 Opus, 159 Claude 3 Sonnet, 264 Claude 3 Haiku and 3.5 Haiku —
    documented (Anthropic's tool-use pricing table, ``tool_choice`` auto: hango never sets it);
    467 for v4.7 and v4.8 — estimate (346 × 1.35, the v4.7/v3 ratio ctok gives the bench
    corpus's prose and code);
  * 0 per tool — measured as far as it goes: Anthropic's documented one-tool example (403
    tokens) leaves no room for a wrapper once the preamble and ctok's part counts are taken out
    (it leaves −14: the schema is rendered more compactly than its JSON);
  * 20 per tool call and 19 per result (v3), 27 and 19 (v4.7, v4.8) — estimate: ctok's count of
    the ``<function_calls><invoke name="">`` / ``<function_results><result>`` markup of Claude's
    tool-use format;
  * 1 per ``"\\n\\n"`` joining text blocks — measured (+0.80 v3 and v4.7, +1.0 v4.8 on average,
    ``bench/bench_tokens.py``).

The estimator keeps its own overheads (:data:`harness.estimator.MESSAGE_OVERHEAD` and the
others), moved into ``framing`` here, so :class:`Estimate` totals what
:func:`harness.estimator.estimate_request` does.

Counting must be cheap: summarization counts every request. Messages and tool definitions are
immutable and cached by identity (as the estimator does); texts are also cached by content in a
bounded LRU, so a state rebuilt from the database (the inspector builds one per request) finds
its texts counted already. ctok is pure Python (a few ms per 1,000 characters), so for Claude
this cache is what keeps a request cheap; :class:`HistoryTotal` adds a growing history's new
messages only.
"""

from __future__ import annotations

import hashlib
import logging
import operator
import threading
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import cache
from typing import Literal, Protocol, assert_never

from harness import estimator
from harness.errors import ProviderError
from harness.estimator import _IdentityCache  # the estimator's, not a copy of it
from harness.messages import (
    Block,
    Message,
    Request,
    TextBlock,
    ToolDef,
    ToolResultBlock,
    ToolUseBlock,
)
from harness.providers.base import Provider, TokenCounter
from harness.serde import json_text

log = logging.getLogger(__name__)

Counted = Literal["provider", "tokenizer", "estimate"]


class Tokenizer(Protocol):
    """Counts for one model family. Not :class:`harness.providers.base.TokenCounter`, which is
    a provider's count endpoint; this one works offline."""

    name: str        # "o200k_base", "cl100k_base", "claude-v3", "claude-v4.7", "estimate"…
    source: Counted  # "tokenizer" or "estimate"

    def text(self, text: str) -> int: ...

    def block(self, block: Block) -> int:
        """A block's content only: text; tool_use id, name, JSON input; tool_result id and
        content."""
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


# -- texts counted by a real tokenizer ----------------------------------------------------------

# Texts up to this long are keyed by value; longer ones by a digest, so the cache never holds a
# long tool result alive after its message is gone.
_KEY_BY_VALUE = 256
TEXT_CACHE_SIZE = 16_384


class _TextCache:
    """Counts by content, the least recently used dropped first. Locked: a web process may
    count on several threads."""

    def __init__(self, count: Callable[[str], int], *, size: int) -> None:
        self._count, self._size = count, size
        self._entries: OrderedDict[str | bytes, int] = OrderedDict()
        self._lock = threading.Lock()
        self.misses = 0

    def __call__(self, text: str) -> int:
        if not text:
            return 0
        key: str | bytes = text if len(text) <= _KEY_BY_VALUE else hashlib.blake2b(
            text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        with self._lock:
            hit = self._entries.get(key)
            if hit is not None:
                self._entries.move_to_end(key)
                return hit
        value = self._count(text)  # outside the lock: ctok takes milliseconds
        with self._lock:
            self.misses += 1
            self._entries[key] = value
            if len(self._entries) > self._size:
                self._entries.popitem(last=False)
        return value

    def __len__(self) -> int:
        return len(self._entries)


class _Content:
    """One encoding's content counts, cached: texts by content, messages and tools by identity.
    Shared by every model of the family (their framing differs, their content does not)."""

    def __init__(self, count: Callable[[str], int], *, cache_size: int = TEXT_CACHE_SIZE) -> None:
        self.text = _TextCache(count, size=cache_size)
        self.messages = _IdentityCache()
        self.tools = _IdentityCache()

    def block(self, block: Block) -> int:
        match block:
            case TextBlock():
                return self.text(block.text)
            case ToolUseBlock():
                return (self.text(block.id) + self.text(block.name)
                        + self.text(json_text(block.input)))
            case ToolResultBlock():
                return self.text(block.tool_use_id) + self.text(block.content)
            case _:
                assert_never(block)

    def _message(self, message: Message) -> int:
        return sum(self.block(b) for b in message.content)

    def message(self, message: Message) -> int:
        return self.messages.get(message, self._message)

    def _tool(self, tool: ToolDef) -> int:
        return (self.text(tool.name) + self.text(tool.description)
                + self.text(json_text(tool.input_schema)))

    def tool(self, tool: ToolDef) -> int:
        return self.tools.get(tool, self._tool)


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


class _ContentCounts(ABC):
    """The content half of a :class:`Tokenizer`, through one cached :class:`_Content`; the
    framing half is the subclass's."""

    _content: _Content

    def text(self, text: str) -> int:
        return self._content.text(text)

    def block(self, block: Block) -> int:
        return self._content.block(block)

    def message(self, message: Message) -> int:
        return self._content.message(message)

    def tool(self, tool: ToolDef) -> int:
        return self._content.tool(tool)

    @abstractmethod
    def framing(self, request: Request) -> int: ...

    def request(self, request: Request) -> int:
        return (sum(self.block(b) for b in request.system)
                + sum(self.tool(tool) for tool in request.tools)
                + sum(self.message(m) for m in request.messages) + self.framing(request))


class FamilyTokenizer(_ContentCounts):
    """A model family's encoding with one model's framing."""

    source: Counted = "tokenizer"

    def __init__(self, *, name: str, content: _Content, framing: Framing) -> None:
        self.name, self._content, self.framing_costs = name, content, framing

    def message_framing(self, message: Message) -> int:
        return self.framing_costs.of_message(message)

    def framing(self, request: Request) -> int:
        return (self.framing_costs.of_request(request)
                + sum(self.framing_costs.of_message(m) for m in request.messages))

    def __repr__(self) -> str:
        return f"FamilyTokenizer({self.name!r}, {self.framing_costs})"


# -- the estimator, where no tokenizer fits ------------------------------------------------------


class Estimate(_ContentCounts):
    """:mod:`harness.estimator` behind the same interface, its overheads as the framing: the
    total is :func:`harness.estimator.estimate_request`'s. Its texts go through the same bounded
    content cache as a tokenizer's (the estimator's own keeps only 512), so a state rebuilt from
    the database — the inspector's, every request — finds a long history counted already."""

    name = "estimate"
    source: Counted = "estimate"

    def __init__(self) -> None:
        self._content = _Content(estimator.estimate_text)

    def message_framing(self, message: Message) -> int:
        return estimator.MESSAGE_OVERHEAD + estimator.BLOCK_OVERHEAD * len(message.content)

    def framing(self, request: Request) -> int:
        return (estimator.BLOCK_OVERHEAD * len(request.system)
                + estimator.TOOL_OVERHEAD * len(request.tools)
                + sum(self.message_framing(m) for m in request.messages))

    def __repr__(self) -> str:
        return "Estimate()"


ESTIMATE = Estimate()


# -- the families and the models -----------------------------------------------------------------

# ctok's single-message frame per version it is asked for (its ``tokenize`` starts with this
# many ⟨pad⟩ tokens; a test pins them).
CTOK_FRAMES: dict[str, int] = {"3.0": 7, "4.7": 11, "4.8": 6}


def _quicktok(encoding: str) -> Callable[[str], int]:
    import quicktok  # the encoding loads in ~0.2-0.6 s: only for a model that needs it

    return quicktok.get_encoding(encoding).count


def _ctok(version: str) -> Callable[[str], int]:
    import ctok

    frame = CTOK_FRAMES[version]

    def count(text: str) -> int:
        return ctok.token_count(text, version) - frame

    count("")  # load the vocabulary now rather than inside the first request
    return count


# encoding name -> how to load its text counter
ENCODINGS: dict[str, Callable[[], Callable[[str], int]]] = {
    "o200k_base": lambda: _quicktok("o200k_base"),
    "cl100k_base": lambda: _quicktok("cl100k_base"),
    "claude-v3": lambda: _ctok("3.0"),
    "claude-v4.7": lambda: _ctok("4.7"),
    "claude-v4.8": lambda: _ctok("4.8"),
}

_OPENAI = Framing(request=3, system=4, message=4, join=0, tool_use=3, tool_result=4,
                  results_are_messages=True)


def _claude(frame: int, *, tools: int, tool_use: int, tool_result: int = 19) -> Framing:
    message = (frame + 1) // 2
    return Framing(request=frame - message, system=0, message=message, join=1,
                   tool_use=tool_use, tool_result=tool_result, tool=0, tools=tools)


# profile -> (encoding, framing): what one group of models costs
PROFILES: dict[str, tuple[str, Framing]] = {
    "gpt-4o": ("o200k_base", replace(_OPENAI, tool=19)),
    "gpt-4": ("cl100k_base", replace(_OPENAI, tool=22)),
    "claude-3-opus": ("claude-v3", _claude(7, tools=530, tool_use=20)),
    "claude-3-sonnet": ("claude-v3", _claude(7, tools=159, tool_use=20)),
    "claude-3-haiku": ("claude-v3", _claude(7, tools=264, tool_use=20)),
    "claude-3.5": ("claude-v3", _claude(7, tools=346, tool_use=20)),  # 3.5 Sonnet … Opus 4.6
    "claude-4.7": ("claude-v4.7", _claude(11, tools=467, tool_use=27)),
    "claude-4.8": ("claude-v4.8", _claude(6, tools=467, tool_use=27)),
}

# (provider, model name prefix) -> profile; the longest matching prefix wins, so dated snapshots
# (claude-opus-4-20250514, gpt-4o-2024-08-06) find their family. Anything else is estimated.
MODELS: dict[tuple[str, str], str] = {
    ("openai", "gpt-3.5"): "gpt-4",
    ("openai", "gpt-4"): "gpt-4",
    ("openai", "gpt-4o"): "gpt-4o",
    ("openai", "chatgpt-4o"): "gpt-4o",
    ("openai", "gpt-4.1"): "gpt-4o",
    ("openai", "gpt-4.5"): "gpt-4o",
    ("openai", "gpt-5"): "gpt-4o",
    ("openai", "gpt-oss"): "gpt-4o",
    ("openai", "o1"): "gpt-4o",
    ("openai", "o3"): "gpt-4o",
    ("openai", "o4"): "gpt-4o",
    ("anthropic", "claude-3"): "claude-3.5",  # claude-3-5-sonnet, claude-3-7-sonnet
    ("anthropic", "claude-3-opus"): "claude-3-opus",
    ("anthropic", "claude-3-sonnet"): "claude-3-sonnet",
    ("anthropic", "claude-3-haiku"): "claude-3-haiku",
    ("anthropic", "claude-3-5-haiku"): "claude-3-haiku",
    ("anthropic", "claude-opus-4"): "claude-3.5",
    ("anthropic", "claude-sonnet-4"): "claude-3.5",
    ("anthropic", "claude-haiku-4"): "claude-3.5",
    ("anthropic", "claude-opus-4-7"): "claude-4.7",
    ("anthropic", "claude-opus-4-8"): "claude-4.8",
    ("anthropic", "claude-opus-5"): "claude-4.8",
    ("anthropic", "claude-sonnet-5"): "claude-4.8",
    ("anthropic", "claude-fable-5"): "claude-4.8",
}


@cache
def _content(encoding: str) -> _Content | None:
    try:
        return _Content(ENCODINGS[encoding]())
    except ImportError as exc:  # an install without its step: count, but say how
        log.warning("token counts for %s fall back to the estimate: %s (make install)",
                    encoding, exc)
        return None


@cache
def _profile(profile: str) -> Tokenizer:
    encoding, framing = PROFILES[profile]
    content = _content(encoding)
    if content is None:
        return ESTIMATE
    return FamilyTokenizer(name=encoding, content=content, framing=framing)


def profile_for(model: str) -> str | None:
    """The profile of ``model`` (``"<provider>:<model>"``), or None where no tokenizer fits."""
    provider, _, name = model.partition(":")
    name = name.lower()
    best, found = "", None
    for (known, prefix), profile in MODELS.items():
        if known == provider and name.startswith(prefix) and len(prefix) > len(best):
            best, found = prefix, profile
    return found


def tokenizer_for(model: str) -> Tokenizer:
    """The tokenizer for ``model`` (``"<provider>:<model>"``): the family's own where one is
    known, else the estimate. One instance per profile, so its caches serve every caller."""
    profile = profile_for(model)
    return ESTIMATE if profile is None else _profile(profile)


# -- totals ---------------------------------------------------------------------------------------


class HistoryTotal:
    """A growing history's tokens, framing included (a run's, turn after turn): when the
    messages start with those of the previous call — the same objects — only the new ones are
    counted. Holds the last history it was given; keep one per run."""

    def __init__(self, tokenizer: Tokenizer) -> None:
        self.tokenizer = tokenizer
        self._messages: tuple[Message, ...] = ()
        self._total = 0

    def _count(self, messages: Sequence[Message]) -> int:
        t = self.tokenizer
        return sum(t.message(m) + t.message_framing(m) for m in messages)

    def __call__(self, messages: Sequence[Message]) -> int:
        seen = len(self._messages)
        if len(messages) >= seen and all(map(operator.is_, messages, self._messages)):
            total = self._total + self._count(messages[seen:])
        else:
            total = self._count(messages)
        self._messages, self._total = tuple(messages), total
        return total


def count_request(request: Request, *, tokenizer: Tokenizer,
                  provider: Provider | None = None) -> tuple[int, Counted]:
    """The request's input tokens and where they come from: the provider's count endpoint when
    it has one and answers (one API call), else ``tokenizer``."""
    if isinstance(provider, TokenCounter):
        try:
            return provider.count_tokens(request), "provider"
        except ProviderError:
            pass  # counting is advisory: an unreachable counter must not stop the caller
    return tokenizer.request(request), tokenizer.source

