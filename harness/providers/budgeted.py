"""A provider whose every call first holds its worst case against a budget (a tenant's quota),
so the calls in flight can never take the budget past its end.

It passes token counting through untouched, and streaming: its :meth:`Budgeted.stream` holds
the budget once per call and yields what the wrapped provider streams, or, for one that does not
stream, its whole answer as the stream's one event; so a loop may stream over any provider it
wraps.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Protocol

from harness.messages import Request, Response
from harness.providers.base import Provider, StreamDone, StreamEvent, Streaming, TokenCounter
from harness.tokens.base import Tokenizer


class Budget(Protocol):
    def reserve(self, tokens: int) -> None:
        """Hold ``tokens`` for a call about to be sent, or raise
        :class:`~harness.errors.QuotaReached` when they do not fit. Whoever records the call's
        usage releases the hold."""
        ...


def worst_case(request: Request, tokenizer: Tokenizer) -> int:
    """The most a call can spend: its input as the model family counts it, and ``max_tokens``."""
    return tokenizer.request(request) + request.max_tokens


class Budgeted:
    """``inner``, with each call's :func:`worst_case` reserved before it is sent. It wraps the
    run's provider, so the summarizer's and subagents' calls are held like the agent's."""

    count_tokens: Callable[[Request], int]  # set when ``inner`` counts

    def __init__(self, inner: Provider, budget: Budget, tokenizer: Tokenizer) -> None:
        self.inner, self.budget, self.tokenizer = inner, budget, tokenizer
        self.name = inner.name
        self._inner_stream: Callable[[Request], Iterator[StreamEvent]] | None = (
            inner.stream if isinstance(inner, Streaming) else None)
        if isinstance(inner, TokenCounter):
            # Counting spends nothing of the budget, and a run under a quota must measure its
            # requests with the counter a run without one uses (summarization's trigger).
            self.count_tokens = inner.count_tokens

    def complete(self, request: Request) -> Response:
        self.budget.reserve(worst_case(request, self.tokenizer))
        return self.inner.complete(request)

    def stream(self, request: Request) -> Iterator[StreamEvent]:
        self.budget.reserve(worst_case(request, self.tokenizer))
        if self._inner_stream is None:
            yield StreamDone(response=self.inner.complete(request))
        else:
            yield from self._inner_stream(request)
