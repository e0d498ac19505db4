"""A provider whose token counts are asked once per request, for the context inspector.

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
