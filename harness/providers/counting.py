"""A request's tokens as its provider counts them, else as the tokenizer does; and a provider
whose counts are asked once per request, for the context inspector.

:func:`count_request` asks the provider's count endpoint
(:class:`~harness.providers.base.TokenCounter`) when it has one and it answers, and takes the
tokenizer's count otherwise: counting is advisory, so an unreachable counter must not stop the
caller. Summarization asks it near its budget.

One inspection may count the same request more than once: summarization measures it near its
budget (as a run does) and ``?counted=provider`` asks for its total again; an override that
takes nothing out of the request captures it twice. Each ask is a round trip to the provider,
and one it cannot answer retries before it fails. :class:`CountsOnce` answers a request equal
to one already counted with that count, or that failure, so an inspection asks once for each
request it shows. It lives as long as the loop the inspector built for one inspection.
"""

from __future__ import annotations

from collections.abc import Callable

from harness.errors import ProviderError
from harness.messages import Request, Response
from harness.providers.base import Provider, TokenCounter
from harness.tokens.base import Counted, Tokenizer


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


class CountsOnce:
    """``inner``, each request's count (or its failure) remembered. It never calls the model
    for an answer other than through ``inner``; it counts exactly when ``inner`` does."""

    count_tokens: Callable[[Request], int]  # set when ``inner`` counts

    def __init__(self, inner: Provider) -> None:
        self.inner = inner
        self.name = inner.name
        # (request, count or failure): few per inspection, compared with == (the requests of
        # one inspection share their message objects, so equal ones compare by identity).
        self._asked: list[tuple[Request, int | ProviderError]] = []
        if isinstance(inner, TokenCounter):
            self.count_tokens = self._count(inner)

    def complete(self, request: Request) -> Response:
        return self.inner.complete(request)

    def _count(self, inner: TokenCounter) -> Callable[[Request], int]:
        def count_tokens(request: Request) -> int:
            answer = next((a for r, a in self._asked if r == request), None)
            if answer is None:
                try:
                    answer = inner.count_tokens(request)
                except ProviderError as exc:
                    answer = exc
                self._asked.append((request, answer))
            if isinstance(answer, ProviderError):
                raise answer
            return answer

        return count_tokens
