"""Provider-neutral value types: content blocks, messages, tool definitions, requests, responses.

Every adapter translates to and from these; nothing provider-specific leaks past an adapter.
They are frozen dataclasses, changed with :func:`dataclasses.replace`. JSON (de)serialisation
lives in :mod:`harness.serde`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal, NamedTuple, get_args

Role = Literal["user", "assistant"]
StopReason = Literal["end_turn", "tool_use", "max_tokens", "stop_sequence", "refusal"]
STOP_REASONS: tuple[StopReason, ...] = (
    "end_turn", "tool_use", "max_tokens", "stop_sequence", "refusal",
)


@dataclass(frozen=True, kw_only=True)
class CacheControl:
    """A prompt-cache breakpoint: everything up to and including the marked block is cacheable."""

    type: Literal["ephemeral"] = "ephemeral"


@dataclass(frozen=True, kw_only=True)
class TextBlock:
    text: str
    cache_control: CacheControl | None = None
    type: Literal["text"] = "text"


@dataclass(frozen=True, kw_only=True)
class ToolUseBlock:
    id: str
    name: str
    input: dict[str, Any]
    cache_control: CacheControl | None = None
    type: Literal["tool_use"] = "tool_use"


@dataclass(frozen=True, kw_only=True)
class ImageBlock:
    """An image a tool result carries: its bytes in base64 (``data``) and what they are
    (``media_type``). Not a block of a message's own: only :class:`ToolResultBlock` holds
    images. A tool may answer any media type; before a result is stored,
    :func:`harness.images.admit` keeps only what a model can be sent (one of
    :data:`IMAGE_TYPES`, within the size limits) and says so in the result's text for the
    rest."""

    media_type: str
    data: str
    type: Literal["image"] = "image"


ImageType = Literal["image/png", "image/jpeg", "image/gif", "image/webp"]
IMAGE_TYPES: tuple[ImageType, ...] = get_args(ImageType)


@dataclass(frozen=True, kw_only=True)
class ToolResultBlock:
    tool_use_id: str
    content: str  # the result's text: every reader of a result reads this
    is_error: bool = False
    images: tuple[ImageBlock, ...] = ()  # sent after the text where the wire takes images
    cache_control: CacheControl | None = None
    type: Literal["tool_result"] = "tool_result"


Block = TextBlock | ToolUseBlock | ToolResultBlock


@dataclass(frozen=True, kw_only=True)
class Message:
    role: Role
    content: tuple[Block, ...]
    # Provenance: the stored message's seq (part id ``message:<seq>``); None for a message not
    # stored yet or made up for one request (a repair, a summary). Never sent to a provider.
    seq: int | None = None

    @classmethod
    def user(cls, text: str) -> Message:
        return cls(role="user", content=(TextBlock(text=text),))

    @property
    def text(self) -> str:
        """The message's text blocks joined; tool blocks are left out."""
        return "".join(b.text for b in self.content if isinstance(b, TextBlock))

    # Computed once per message (a message never changes): a long history is walked for its
    # calls and results several times a request.
    @cached_property
    def tool_uses(self) -> tuple[ToolUseBlock, ...]:
        return tuple(b for b in self.content if isinstance(b, ToolUseBlock))

    @cached_property
    def tool_results(self) -> tuple[ToolResultBlock, ...]:
        return tuple(b for b in self.content if isinstance(b, ToolResultBlock))


@dataclass(frozen=True, kw_only=True)
class ToolDef:
    """What the model is told about a tool (the callable side lives in :mod:`harness.tools`)."""

    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class ToolChoice:
    """Whether the model must call a tool: ``auto`` (it decides), ``required`` (some tool),
    ``none`` (no tool), or ``tool`` (the one named)."""

    mode: Literal["auto", "required", "none", "tool"]
    name: str | None = None


@dataclass(frozen=True, kw_only=True)
class Request:
    """One model call. The sampling fields left at None are not sent: the server's own
    defaults apply (the agent's ``model_settings``, :mod:`harness.model_settings`)."""

    model: str
    system: tuple[TextBlock, ...] = ()
    messages: tuple[Message, ...] = ()
    tools: tuple[ToolDef, ...] = ()
    max_tokens: int = 4096
    temperature: float | None = None
    top_p: float | None = None
    stop: tuple[str, ...] = ()
    tool_choice: ToolChoice | None = None
    parallel_tool_calls: bool | None = None
    reasoning_effort: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class Usage:
    """Tokens of one model call. ``input_tokens`` excludes the cache reads and writes counted
    beside it (the adapters normalise providers that report a total), so the four add up."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
        )

    @property
    def total(self) -> int:
        """All four counters: what the call cost against a token quota."""
        return (self.input_tokens + self.output_tokens + self.cache_read_tokens
                + self.cache_write_tokens)


class PartPrint(NamedTuple):
    """One part a model call sent, fingerprinted: its part id, a 32-bit hash of its content as
    sent, and its tokens as the run's tokenizer counts them (:mod:`harness.fingerprint`)."""

    part: str
    digest: int
    tokens: int


@dataclass(frozen=True, kw_only=True)
class RequestPrint:
    """A sent request's fingerprint: its parts in the order the provider reads them (tools,
    system blocks, messages), and how many of them lead it in the prompt cache's prefix."""

    parts: tuple[PartPrint, ...] = ()
    cached: int = 0  # the leading parts up to the cache mark (0: nothing marked)

    @property
    def cached_tokens(self) -> int:
        """The tokens of the cached prefix's parts: what the call could read from the cache."""
        return sum(p.tokens for p in self.parts[:self.cached])


# Where a call's usage comes from: the provider's answer, or, when the answer carried none (a
# server that ignores include_usage, a call cancelled mid-stream), hango's own count of what it
# sent and received, with the model family's tokenizer ("counted") or the estimate.
UsageSource = Literal["provider", "counted", "estimated"]


@dataclass(frozen=True, kw_only=True)
class ModelUsage:
    """One model call's usage, with why it was made (``run``, ``summarize``, ``subagent``…)."""

    purpose: str
    provider: str
    model: str
    usage: Usage
    sent: RequestPrint | None = None  # a run's own call: the fingerprint of what it sent
    source: UsageSource = "provider"


@dataclass(frozen=True, kw_only=True)
class Response:
    message: Message
    stop_reason: StopReason
    usage: Usage = Usage()
    model: str = ""
