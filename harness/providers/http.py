"""The HTTP client the adapters give their SDKs: the SDK's own defaults, with two response
hooks for what the SDKs decide or hide.

- A 5xx that refuses the request as invalid (:func:`harness.providers.rejections.is_invalid`) is
  marked ``x-should-retry: false``, the header the SDKs obey before their own status rules: the
  identical request is not sent again.
- An OpenAI-style event stream is watched for its ``data: [DONE]`` line, which the SDK consumes
  without a word (:func:`saw_done`): with the chunks' ``finish_reason`` it is how the adapter
  tells a stream that ended from one that was cut.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import httpx2

from harness.providers.rejections import is_invalid

NO_RETRY = "x-should-retry"
DONE = b"data: [DONE]"


class _DoneWatch(httpx2.SyncByteStream):
    """The response's byte stream, passed on unchanged, noting whether ``[DONE]`` went by."""

    def __init__(self, inner: httpx2.SyncByteStream) -> None:
        self.inner = inner
        self.done = False

    def __iter__(self) -> Iterator[bytes]:
        tail = b""
        for chunk in self.inner:
            if not self.done:
                seen = tail + chunk
                self.done = DONE in seen
                tail = seen[-len(DONE):]
            yield chunk

    def close(self) -> None:
        self.inner.close()


def saw_done(response: Any) -> bool:
    """Whether the event stream of ``response`` carried ``data: [DONE]`` (so far)."""
    stream = getattr(response, "stream", None)
    return isinstance(stream, _DoneWatch) and stream.done


def _hook(response: httpx2.Response) -> None:
    if response.status_code >= 500 and NO_RETRY not in response.headers:
        response.read()  # an error body is small, and the SDK reads it next anyway
        body: Any
        try:
            body = response.json()
        except ValueError:
            body = response.text
        if is_invalid(response.status_code, body):
            response.headers[NO_RETRY] = "false"
    elif (response.status_code == 200 and isinstance(response.stream, httpx2.SyncByteStream)
          and response.headers.get("content-type", "").startswith("text/event-stream")):
        response.stream = _DoneWatch(response.stream)


def http_client(factory: Callable[..., httpx2.Client]) -> httpx2.Client:
    """An SDK's default client (``factory``: its ``DefaultHttpxClient``, which keeps the SDK's
    limits, timeouts and redirects) with the hooks above."""
    return factory(event_hooks={"response": [_hook]})
