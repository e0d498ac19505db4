"""What a model provider adapter offers the harness."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from harness.errors import ProviderAuthError
from harness.messages import Request, Response

# OpenAI's own API, where the openai SDK goes when no base URL is set. Here rather than beside
# the adapter, so that a module asking whether a URL is OpenAI's does not import the SDK (over a
# second of CPU in every worker and web process that starts).
OPENAI_API_URL = "https://api.openai.com/v1"


@dataclass(frozen=True, kw_only=True)
class ProviderSettings:
    """Everything adapters read from configuration, passed in (the harness reads no settings)."""

    anthropic_api_key: str | None = None
    anthropic_base_url: str | None = None
    openai_api_key: str | None = None
    openai_base_url: str | None = None
    timeout_seconds: float = 120.0
    max_retries: int = 3
    scripted_delay_ms: int = 0
    scripted_word_delay_ms: int = 0


@runtime_checkable
class Provider(Protocol):
    name: str  # "anthropic", "openai", "scripted"

    def complete(self, request: Request) -> Response: ...


@runtime_checkable
class TokenCounter(Protocol):
    """Providers that can count a request's input tokens exactly."""

    def count_tokens(self, request: Request) -> int: ...


@dataclass(frozen=True, kw_only=True)
class TextDelta:
    text: str


@dataclass(frozen=True, kw_only=True)
class StreamDone:
    response: Response


StreamEvent = TextDelta | StreamDone


@runtime_checkable
class Streaming(Protocol):
    """Providers that can stream token deltas; the last event is :class:`StreamDone`."""

    def stream(self, request: Request) -> Iterator[StreamEvent]: ...


@dataclass(kw_only=True)
class Unavailable:
    """Stands for a provider that cannot be built here (no API key): the context inspector
    assembles requests without calling a model, so it needs none; a call says why there is
    none."""

    name: str
    reason: str

    def complete(self, request: Request) -> Response:
        raise ProviderAuthError(self.reason, provider=self.name)
