"""The Anthropic Messages API adapter: hango's requests to the wire and the wire back, nothing more.

Retries belong to the SDK (429, 5xx and 529 overloaded, with backoff and ``retry-after``), bounded
by ``settings.max_retries``; what is left after them is translated in :func:`_map_error`, the
one place SDK errors become hango's.

A tool result with images is sent with a content list: its text, then an image block per image
(:func:`_map_result_content`).

``Request.temperature`` and ``top_p`` are not sent: API version 2026-10-21 (the one SDK 2.x
speaks) rejects every sampling parameter with a 400, and the SDK no longer has them (an agent's
``model_settings`` refuses them for ``anthropic:`` models). The rest of the agent's settings
are sent: ``stop_sequences``, ``tool_choice`` (``required`` is the wire's ``any``) with
``disable_parallel_tool_use``, and the reasoning effort as ``output_config.effort``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anthropic
import httpx2
from anthropic.types import Message as WireMessage

from harness import telemetry
from harness.errors import (
    ProviderAuthError,
    ProviderBadRequest,
    ProviderError,
    ProviderOverloaded,
    ProviderRateLimited,
    ProviderUnavailable,
)
from harness.messages import (
    Block,
    CacheControl,
    Message,
    Request,
    Response,
    StopReason,
    TextBlock,
    ToolDef,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
)
from harness.providers import abort, rejections
from harness.providers.base import ProviderSettings, StreamDone, StreamEvent, TextDelta
from harness.providers.http import http_client

PROVIDER = "anthropic"

_STOP_REASONS: dict[str, StopReason] = {
    "end_turn": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "stop_sequence": "stop_sequence",
    "refusal": "refusal",
    # The context window filled up before max_tokens did: the answer is cut short all the same.
    "model_context_window_exceeded": "max_tokens",
}


class AnthropicProvider:
    """Claude through the official SDK; also a :class:`TokenCounter` and :class:`Streaming`."""

    name = PROVIDER

    def __init__(self, *, settings: ProviderSettings) -> None:
        key = settings.anthropic_api_key or os.environ.get("ANTHROPIC_API_KEY")
        if not key:
            raise ProviderAuthError(
                "no Anthropic API key: set ANTHROPIC_API_KEY, or use the offline model "
                "scripted:demo", provider=PROVIDER)
        self._key = key
        self._client = anthropic.Anthropic(
            api_key=key, base_url=settings.anthropic_base_url,
            timeout=settings.timeout_seconds, max_retries=settings.max_retries,
            http_client=http_client(anthropic.DefaultHttpxClient))

    def complete(self, request: Request) -> Response:
        with self._errors_mapped():
            wire = self._client.messages.create(
                **_map_request(request), **_generation(request),
                extra_headers=telemetry.trace_headers() or None)
        return _map_response(wire)

    def count_tokens(self, request: Request) -> int:
        with self._errors_mapped():
            return self._client.messages.count_tokens(**_map_request(request)).input_tokens

    def stream(self, request: Request) -> Iterator[StreamEvent]:
        started, stopped, deltas = False, False, 0
        with self._errors_mapped():
            try:
                with self._client.messages.stream(
                        **_map_request(request), **_generation(request),
                        extra_headers=telemetry.trace_headers() or None) as stream:
                    abort.on_abort(abort.shut_down(stream.response))
                    for event in stream:
                        started = started or event.type == "message_start"
                        stopped = stopped or event.type == "message_stop"
                        deltas += event.type == "content_block_delta"
                        if event.type == "text":
                            yield TextDelta(text=event.text)
                    if not started:  # a body that is no event stream (a proxy that ignored it)
                        raise ProviderError("Anthropic API error (mid-stream): the stream held "
                                            "no message", provider=PROVIDER)
                    if not stopped:  # the server stopped (or was stopped) mid-answer
                        raise ProviderUnavailable(
                            "Anthropic API error (stream cut): the stream ended "
                            f"{_after(deltas)} without message_stop", provider=PROVIDER)
                    final = stream.get_final_message()
            except httpx2.TransportError as err:  # read from the stream, passed on as it is
                raise ProviderUnavailable(
                    f"Anthropic API error (stream cut): the connection was lost "
                    f"{_after(deltas)}: {err or type(err).__name__}", provider=PROVIDER) from err
        yield StreamDone(response=_map_response(final))

    @contextmanager
    def _errors_mapped(self) -> Iterator[None]:
        try:
            yield
        except anthropic.APIError as err:
            raise _map_error(err, secret=self._key) from err


def _after(deltas: int) -> str:
    return f"after {deltas} deltas of the answer" if deltas else "before any of the answer"


# -- to the wire ---------------------------------------------------------------------------


def _map_request(request: Request) -> dict[str, Any]:
    """The parameters ``messages.create`` and ``messages.count_tokens`` share."""
    params: dict[str, Any] = {
        "model": request.model,
        "messages": [_map_message(m) for m in request.messages],
    }
    if request.system:
        params["system"] = [_map_block(b) for b in request.system]
    if request.tools:
        params["tools"] = [_map_tool(t) for t in request.tools]
        choice = _tool_choice(request)
        if choice is not None:
            params["tool_choice"] = choice
    if request.reasoning_effort is not None:
        params["output_config"] = {"effort": request.reasoning_effort}
    return params


def _generation(request: Request) -> dict[str, Any]:
    """What ``messages.create`` takes beside the parameters counting shares."""
    params: dict[str, Any] = {"max_tokens": request.max_tokens}
    if request.stop:
        params["stop_sequences"] = list(request.stop)
    return params


def _tool_choice(request: Request) -> dict[str, Any] | None:
    """The wire's tool choice: one field carries both the choice and whether calls may be
    parallel (an agent that sets only ``parallel_tool_calls`` gets ``auto`` with it)."""
    choice, parallel = request.tool_choice, request.parallel_tool_calls
    if choice is None and parallel is None:
        return None
    mode = "auto" if choice is None else choice.mode
    wire: dict[str, Any] = {"type": {"required": "any"}.get(mode, mode)}
    if mode == "tool" and choice is not None:
        wire["name"] = choice.name
    if parallel is not None and mode != "none":  # "none" takes no such flag
        wire["disable_parallel_tool_use"] = not parallel
    return wire


def _map_message(message: Message) -> dict[str, Any]:
    return {"role": message.role, "content": [_map_block(b) for b in message.content]}


def _map_block(block: Block) -> dict[str, Any]:
    match block:
        case TextBlock():
            wire: dict[str, Any] = {"type": "text", "text": block.text}
        case ToolUseBlock():
            wire = {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
        case ToolResultBlock():
            wire = {"type": "tool_result", "tool_use_id": block.tool_use_id,
                    "content": _map_result_content(block)}
            if block.is_error:
                wire["is_error"] = True
    if block.cache_control is not None:
        wire["cache_control"] = _map_cache_control(block.cache_control)
    return wire


def _map_result_content(block: ToolResultBlock) -> str | list[dict[str, Any]]:
    """A result's text as a string; with images, a list of its text block (none when the text
    is empty: the API refuses an empty text block) and an image block per image, as the
    Messages API takes a tool_result's content."""
    if not block.images:
        return block.content
    text = [{"type": "text", "text": block.content}] if block.content else []
    return text + [{"type": "image", "source": {"type": "base64", "media_type": i.media_type,
                                                "data": i.data}} for i in block.images]


def _map_cache_control(cache_control: CacheControl) -> dict[str, Any]:
    return {"type": cache_control.type}


def _map_tool(tool: ToolDef) -> dict[str, Any]:
    return {"name": tool.name, "description": tool.description, "input_schema": tool.input_schema}


# -- from the wire -------------------------------------------------------------------------


def _map_response(wire: WireMessage) -> Response:
    blocks: list[Block] = []
    for block in wire.content:
        # Thinking, redacted thinking and server-tool blocks have no hango counterpart.
        if block.type == "text":
            blocks.append(TextBlock(text=block.text))
        elif block.type == "tool_use":
            blocks.append(ToolUseBlock(id=block.id, name=block.name, input=dict(block.input)))
    usage = wire.usage
    return Response(
        message=Message(role="assistant", content=tuple(blocks)),
        # pause_turn (a server tool paused a long turn) and values newer than this adapter
        # end the turn; the loop decides on tool calls, not on this value.
        stop_reason=_STOP_REASONS.get(wire.stop_reason or "", "end_turn"),
        usage=Usage(
            input_tokens=usage.input_tokens or 0,
            output_tokens=usage.output_tokens or 0,
            cache_read_tokens=usage.cache_read_input_tokens or 0,
            cache_write_tokens=usage.cache_creation_input_tokens or 0,
        ),
        model=wire.model,
    )


def _map_error(err: anthropic.APIError, *, secret: str) -> ProviderError:
    """The hango error for an SDK error left over after the SDK's own retries."""
    if isinstance(err, anthropic.APIStatusError):
        # An error event inside a stream arrives on a 200 response: only its body tells.
        status = err.status_code if err.status_code >= 400 else None
        where = f"HTTP {status}" if status else "mid-stream"
        detail = rejections.summary(err.body) or err.api_message or err.message
        if err.request_id:
            detail += f" (request-id {err.request_id})"
    else:
        status, where, detail = None, "no response", err.message
    message = f"Anthropic API error ({where}): {detail}".replace(secret, "[redacted]")
    return _error_class(err)(message, status=status, provider=PROVIDER)


def _error_class(err: anthropic.APIError) -> type[ProviderError]:
    if isinstance(err, anthropic.APIStatusError) and rejections.is_invalid(err.status_code,
                                                                            err.body):
        return ProviderBadRequest  # the same request would be refused again: no retry
    match err:
        case anthropic.AuthenticationError() | anthropic.PermissionDeniedError():
            return ProviderAuthError
        case (anthropic.BadRequestError() | anthropic.UnprocessableEntityError()
              | anthropic.NotFoundError()):
            return ProviderBadRequest
        case anthropic.RateLimitError():
            return ProviderRateLimited
        case anthropic.APIStatusError() if err.status_code == 529 or err.type == "overloaded_error":
            return ProviderOverloaded
        case anthropic.APIStatusError() if err.status_code >= 500 or err.type == "api_error":
            return ProviderUnavailable
        case anthropic.APIConnectionError():  # APITimeoutError included
            return ProviderUnavailable
    return ProviderError
