"""Each model call carries the caller's trace context to the provider (issue 35), whole or
streamed: the OpenAI adapter sends the ``traceparent`` of the span current when it is made (the
run's ``chat`` span), and nothing when nothing is traced; the Anthropic SDK traces its calls
itself and sends its own call span's, a child of the ``chat`` span (the adapter's header is
what goes when that SDK's propagation is turned off)."""

from __future__ import annotations

from harness import telemetry
from harness.messages import Message, Request
from harness.providers.anthropic import AnthropicProvider
from harness.providers.base import ProviderSettings
from harness.providers.openai_compat import OpenAICompatProvider
from tests.support.replay import wire, wire_json

REQUEST = Request(model="m", messages=(Message.user("hi"),), max_tokens=16)


def _providers(server):
    settings = ProviderSettings(anthropic_api_key="k", anthropic_base_url=server.url,
                                openai_api_key="k", openai_base_url=server.url, max_retries=0,
                                timeout_seconds=5.0)
    return AnthropicProvider(settings=settings), OpenAICompatProvider(settings=settings)


def _traceparent(span) -> str:
    made = span.get_span_context()
    return f"00-{made.trace_id:032x}-{made.span_id:016x}-{int(made.trace_flags):02x}"


def test_a_model_call_sends_the_current_traceparent(server, spans):
    anthropic, openai = _providers(server)
    server.reply(200, wire_json("anthropic_message_text.json"))
    server.reply_sse(wire("anthropic_stream_text.sse"))
    server.reply(200, wire_json("openai_completion_text.json"))
    server.reply_sse(wire("openai_stream_text.sse"))
    with telemetry.span(telemetry.SPAN_CHAT) as chat:
        anthropic.complete(REQUEST)
        list(anthropic.stream(REQUEST))
        openai.complete(REQUEST)
        list(openai.stream(REQUEST))
    sent = [r.headers.get("traceparent", "") for r in server.requests]
    assert sent[2:] == [_traceparent(chat)] * 2
    by_id = {s.context.span_id: s for s in spans.get_finished_spans()}
    for header in sent[:2]:  # the SDK's call span, under the chat span
        span_id = int(header.split("-")[2], 16)
        assert by_id[span_id].parent.span_id == chat.get_span_context().span_id


def test_no_traceparent_when_nothing_is_traced(server, spans):
    _, openai = _providers(server)
    server.reply(200, wire_json("openai_completion_text.json"))
    openai.complete(REQUEST)
    assert "traceparent" not in server.requests[0].headers
