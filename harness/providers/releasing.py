"""A provider that lets go of what its caller holds before each call goes out.

A model call takes seconds; a run's database connection is needed for milliseconds on either
side of it. The run's provider is wrapped in :class:`Releasing` with the caller's ``release``
(the worker's: give the connection back to its pool), called just before each request is sent —
after a quota hold, which needs the database, and for the summarizer's and subagents' calls as
for the agent's. The next statement takes a connection again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from harness.messages import Request, Response
from harness.providers.base import Provider, StreamEvent, Streaming, TokenCounter


class Releasing:
    """``inner`` with ``release()`` called before each of its calls. It streams, and counts
    tokens, exactly when ``inner`` does."""

    stream: Callable[[Request], Iterator[StreamEvent]]  # set when ``inner`` streams
    count_tokens: Callable[[Request], int]  # set when ``inner`` counts

    def __init__(self, inner: Provider, release: Callable[[], None]) -> None:
        self.inner, self.release = inner, release
        self.name = inner.name
        if isinstance(inner, Streaming):
            self.stream = self._stream(inner)
        if isinstance(inner, TokenCounter):
            self.count_tokens = self._count(inner)

    def complete(self, request: Request) -> Response:
        self.release()
        return self.inner.complete(request)

    def _stream(self, inner: Streaming) -> Callable[[Request], Iterator[StreamEvent]]:
        def stream(request: Request) -> Iterator[StreamEvent]:
            self.release()
            yield from inner.stream(request)

        return stream

    def _count(self, inner: TokenCounter) -> Callable[[Request], int]:
        def count_tokens(request: Request) -> int:
            self.release()
            return inner.count_tokens(request)

        return count_tokens
