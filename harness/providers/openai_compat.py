"""The OpenAI chat-completions adapter, for OpenAI and compatible servers (vLLM, Ollama, ...).

It sends a request through the official SDK and nothing more: hango's blocks become chat
messages and back in :mod:`harness.providers.openai_chat`. Retries belong to the SDK, bounded
by ``settings.max_retries``; what is left is translated in :func:`_map_error`. Token counts come
from OpenAI's input-token count endpoint, which counts the same content as Responses API items
(:meth:`OpenAICompatProvider.count_tokens`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import httpx2
import openai

from harness import telemetry
from harness.errors import (
    ProviderAuthError,
    ProviderBadRequest,
    ProviderError,
    ProviderOverloaded,
    ProviderRateLimited,
    ProviderUnavailable,
)
from harness.messages import Request, Response
from harness.providers import abort, rejections
from harness.providers.base import (
    OPENAI_API_URL,
    ProviderSettings,
    StreamDone,
    StreamEvent,
    TextDelta,
)
from harness.providers.http import http_client, saw_done
from harness.providers.openai_chat import (
    StreamAccumulator,
    map_count_request,
    map_request,
    map_response,
)
from harness.providers.openai_wire import PROVIDER

# Local servers ignore the key, but the SDK refuses to start without one.
PLACEHOLDER_KEY = "not-needed"


class OpenAICompatProvider:
    """Chat completions through the official SDK; also :class:`Streaming`."""

    name = PROVIDER

    def __init__(self, *, settings: ProviderSettings) -> None:
        base_url = settings.openai_base_url or os.environ.get("OPENAI_BASE_URL") or None
        key = settings.openai_api_key or os.environ.get("OPENAI_API_KEY")
        if not key:
            if base_url is None or base_url.rstrip("/") == OPENAI_API_URL:
                raise ProviderAuthError(
                    "no OpenAI API key: set OPENAI_API_KEY, or use the offline model "
                    "scripted:demo", provider=PROVIDER)
            key = PLACEHOLDER_KEY
        self._key = key
        self._no_counter = False  # the server answered the count endpoint with a 404 or 405
        self._client = openai.OpenAI(
            api_key=key, base_url=base_url or OPENAI_API_URL,
            timeout=settings.timeout_seconds, max_retries=settings.max_retries,
            http_client=http_client(openai.DefaultHttpxClient))

    def complete(self, request: Request) -> Response:
        with self._errors_mapped():
            completion = self._client.chat.completions.create(
                **map_request(request), extra_headers=telemetry.trace_headers() or None)
        return map_response(completion)

    def count_tokens(self, request: Request) -> int:
        """The request's input tokens by OpenAI's count endpoint. It counts Responses API
        input, not chat completions (which have no count endpoint): the same messages, calls,
        results and tools in that API's items, so its framing may differ from a chat
        completion's by a few tokens. A compatible server without the endpoint answers an
        error, and the caller counts with the tokenizer."""
        if self._no_counter:
            raise ProviderError("this server has no input-token count endpoint",
                                provider=PROVIDER)
        try:
            with self._errors_mapped():
                tokens = self._client.responses.input_tokens.count(
                    **map_count_request(request)).input_tokens
        except ProviderError as exc:
            cause = exc.__cause__
            if isinstance(cause, openai.APIStatusError) and cause.status_code in (404, 405):
                self._no_counter = True  # a compatible server without the endpoint: ask no more
            raise
        if not isinstance(tokens, int) or tokens < 0:
            raise ProviderError(f"the count endpoint answered no token count ({tokens!r})",
                                provider=PROVIDER)
        return tokens

    def stream(self, request: Request) -> Iterator[StreamEvent]:
        # Accumulated here rather than with the SDK's ``chat.completions.stream`` helper: that
        # helper raises on finish_reason "length" and "content_filter" instead of reporting them.
        acc = StreamAccumulator(model=request.model)
        with self._errors_mapped():
            chunks = self._client.chat.completions.create(
                **map_request(request), stream=True, stream_options={"include_usage": True},
                extra_headers=telemetry.trace_headers() or None)
            abort.on_abort(abort.shut_down(chunks.response))
            with chunks, _cut_mapped(acc):
                for chunk in chunks:
                    if text := acc.add(chunk):
                        yield TextDelta(text=text)
            done = saw_done(chunks.response)
        if not acc.chunks:  # a body that is no event stream (a server that ignored stream)
            raise ProviderError("OpenAI API error (mid-stream): the stream held no completion",
                                provider=PROVIDER)
        if acc.finish_reason is None and not done:
            # The server stopped (or was stopped) mid-answer: what came is not the answer.
            raise ProviderUnavailable(
                f"OpenAI API error (stream cut): the stream ended {_after(acc)} without a "
                "finish_reason or [DONE]", provider=PROVIDER)
        yield StreamDone(response=acc.response())

    @contextmanager
    def _errors_mapped(self) -> Iterator[None]:
        try:
            yield
        except openai.APIError as err:
            raise _map_error(err, secret=self._key) from err


@contextmanager
def _cut_mapped(acc: StreamAccumulator) -> Iterator[None]:
    """A connection lost while the stream is read as the provider error it is, saying how far
    the answer had come. The SDK passes some of the HTTP client's errors on as they are and
    wraps others (a chunked body cut short, as a killed server leaves it) in its
    ``APIConnectionError``, which would otherwise read as "no response"."""
    try:
        yield
    except (httpx2.TransportError, openai.APIConnectionError) as err:
        lost = err.__cause__ if isinstance(err, openai.APIError) and err.__cause__ else err
        raise ProviderUnavailable(
            f"OpenAI API error (stream cut): the connection was lost {_after(acc)}: "
            f"{lost or type(lost).__name__}", provider=PROVIDER) from err


def _after(acc: StreamAccumulator) -> str:
    return (f"after {acc.deltas} deltas of the answer" if acc.deltas
            else f"after {acc.chunks} chunks, before any of the answer")


def _map_error(err: openai.APIError, *, secret: str) -> ProviderError:
    """The hango error for an SDK error left over after the SDK's own retries."""
    if isinstance(err, openai.APIStatusError):
        status: int | None = err.status_code
        where = f"HTTP {status}"
        detail = (_body_message(err.body) or rejections.summary(err.body)
                  or _body_text(err) or err.message)
    else:
        status = None
        where = "no response" if isinstance(err, openai.APIConnectionError) else "mid-stream"
        detail = err.message
    # OpenAI echoes a rejected key in its 401 message; a local server may echo anything.
    message = f"OpenAI API error ({where}): {detail}".replace(secret, "[redacted]")
    return _error_class(err)(message, status=status, provider=PROVIDER)


def _body_message(body: object) -> str | None:
    """The ``message`` of an error body (the SDK hands over its ``error`` object)."""
    if isinstance(body, dict) and isinstance(message := body.get("message"), str):
        return message
    return None


def _body_text(err: openai.APIStatusError) -> str | None:
    """A body that is no JSON (a proxy's text or HTML page) as it came."""
    return err.body if isinstance(err.body, str) and err.body else None


def _error_class(err: openai.APIError) -> type[ProviderError]:
    if isinstance(err, openai.APIStatusError) and rejections.is_invalid(err.status_code,
                                                                         err.body):
        return ProviderBadRequest  # the same request would be refused again: no retry
    match err:
        case openai.AuthenticationError() | openai.PermissionDeniedError():
            return ProviderAuthError
        case openai.BadRequestError() | openai.UnprocessableEntityError() | openai.NotFoundError():
            return ProviderBadRequest
        case openai.RateLimitError():
            return ProviderRateLimited
        # 529 and "overloaded_error" come from compatible proxies in front of Anthropic.
        case openai.APIStatusError() if err.status_code == 529 or err.type == "overloaded_error":
            return ProviderOverloaded
        case openai.APIStatusError() if err.status_code >= 500:
            return ProviderUnavailable
        case openai.APIStatusError():
            return ProviderError
    # A connection failure, a timeout, or an error event in the middle of a stream.
    return ProviderUnavailable
