"""A provider whose every call first holds its worst case against a budget (a tenant's quota),
so the calls in flight can never take the budget past its end."""

from __future__ import annotations

from typing import Protocol

from harness.messages import Request, Response
from harness.providers.base import Provider
from harness.tokens import Tokenizer


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

    def __init__(self, inner: Provider, budget: Budget, tokenizer: Tokenizer) -> None:
        self.inner, self.budget, self.tokenizer = inner, budget, tokenizer
        self.name = inner.name

    def complete(self, request: Request) -> Response:
        self.budget.reserve(worst_case(request, self.tokenizer))
        return self.inner.complete(request)
