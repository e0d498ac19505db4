"""The Anthropic adapter against recorded Messages API payloads replayed over local HTTP."""

from __future__ import annotations

import pytest

from harness.errors import (
    ProviderAuthError,
    ProviderBadRequest,
    ProviderError,
    ProviderOverloaded,
    ProviderRateLimited,
    ProviderUnavailable,
)
from harness.messages import (
    CacheControl,
    Message,
    Request,
    Response,
    TextBlock,
    ToolDef,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
)
from harness.providers import resolve_provider
from harness.providers.anthropic import AnthropicProvider
from harness.providers.base import (
    Provider,
    ProviderSettings,
    StreamDone,
    Streaming,
    TextDelta,
    TokenCounter,
)
from tests.support.replay import FAST_RETRY, wire, wire_json

KEY = "test-key"
MODEL = "claude-sonnet-4-6"
WORD_COUNT = ToolDef(
    name="word_count",
    description="Count the words in a text.",
    input_schema={"type": "object", "properties": {"text": {"type": "string"}},
                  "required": ["text"]},
)
CONVERSATION = Request(
    model=MODEL,
    system=(TextBlock(text="You are terse."),
            TextBlock(text="Tools: word_count.", cache_control=CacheControl())),
    messages=(
        Message.user("How many words in 'one two three'?"),
        Message(role="assistant", content=(
            TextBlock(text="Let me count them."),
            ToolUseBlock(id="toolu_1", name="word_count", input={"text": "one two three"}),
        )),
        Message(role="user", content=(
            ToolResultBlock(tool_use_id="toolu_1", content="3"),
            TextBlock(text="Thanks.", cache_control=CacheControl()),
        )),
    ),
    tools=(WORD_COUNT,),
    max_tokens=1024,
    temperature=0.2,
)


def provider_for(server, **settings) -> AnthropicProvider:
    settings = {"anthropic_api_key": KEY, "anthropic_base_url": server.url, "max_retries": 0,
                "timeout_seconds": 5.0, **settings}
    return AnthropicProvider(settings=ProviderSettings(**settings))


def test_request_maps_to_the_messages_api(server):
    server.reply(200, wire_json("anthropic_message_text.json"))

    provider_for(server).complete(CONVERSATION)

    [sent] = server.requests
    assert (sent.method, sent.path) == ("POST", "/v1/messages")
    # SDK 2.x sends the key as a bearer token; earlier ones sent x-api-key.
    assert (sent.headers.get("authorization") == f"Bearer {KEY}"
            or sent.headers.get("x-api-key") == KEY)
    assert sent.headers["anthropic-version"]
    assert sent.body == {
        "model": MODEL,
        "max_tokens": 1024,
        "system": [
            {"type": "text", "text": "You are terse."},
            {"type": "text", "text": "Tools: word_count.", "cache_control": {"type": "ephemeral"}},
        ],
        "messages": [
            {"role": "user", "content": [
                {"type": "text", "text": "How many words in 'one two three'?"}]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Let me count them."},
                {"type": "tool_use", "id": "toolu_1", "name": "word_count",
                 "input": {"text": "one two three"}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "3"},
                {"type": "text", "text": "Thanks.", "cache_control": {"type": "ephemeral"}},
            ]},
        ],
        "tools": [{
            "name": "word_count",
            "description": "Count the words in a text.",
            "input_schema": {"type": "object", "properties": {"text": {"type": "string"}},
                             "required": ["text"]},
        }],
        # No "temperature": API version 2026-10-21 answers any sampling parameter with a 400.
    }


def test_failed_tool_result_is_marked_as_an_error(server):
    server.reply(200, wire_json("anthropic_message_text.json"))
    request = Request(model=MODEL, messages=(Message(role="user", content=(
        ToolResultBlock(tool_use_id="toolu_1", content="no such file", is_error=True),)),))

    provider_for(server).complete(request)

    [block] = server.bodies[0]["messages"][0]["content"]
    assert block == {"type": "tool_result", "tool_use_id": "toolu_1",
                     "content": "no such file", "is_error": True}
    assert "system" not in server.bodies[0] and "tools" not in server.bodies[0]


def test_response_maps_text_tool_use_and_cache_usage(server):
    server.reply(200, wire_json("anthropic_message_tool_use.json"))

    response = provider_for(server).complete(CONVERSATION)

    assert response == Response(
        message=Message(role="assistant", content=(  # the thinking block is left out
            TextBlock(text="Let me count them."),
            ToolUseBlock(id="toolu_01A09q90qw90lq917835lq9", name="word_count",
                         input={"text": "one two three"}),
        )),
        stop_reason="tool_use",
        usage=Usage(input_tokens=21, output_tokens=48, cache_read_tokens=1536,
                    cache_write_tokens=188),
        model=MODEL,
    )


def test_null_cache_usage_counts_as_zero(server):
    server.reply(200, wire_json("anthropic_message_text.json"))

    response = provider_for(server).complete(CONVERSATION)

    assert response.usage == Usage(input_tokens=2095, output_tokens=503)
    assert response.message.text == "It has 3 words."


@pytest.mark.parametrize(("wire_reason", "stop_reason"), [
    ("end_turn", "end_turn"),
    ("max_tokens", "max_tokens"),
    ("stop_sequence", "stop_sequence"),
    ("refusal", "refusal"),
    ("pause_turn", "end_turn"),
    ("model_context_window_exceeded", "max_tokens"),
    ("a_reason_from_the_future", "end_turn"),
])
def test_stop_reasons(server, wire_reason, stop_reason):
    server.reply(200, {**wire_json("anthropic_message_text.json"), "stop_reason": wire_reason})

    assert provider_for(server).complete(CONVERSATION).stop_reason == stop_reason


def test_count_tokens(server):
    server.reply(200, wire_json("anthropic_count_tokens.json"))

    assert provider_for(server).count_tokens(CONVERSATION) == 2095

    [sent] = server.requests
    assert (sent.method, sent.path) == ("POST", "/v1/messages/count_tokens")
    assert set(sent.body) == {"model", "system", "messages", "tools"}  # no max_tokens


def test_stream_yields_text_deltas_then_the_whole_response(server):
    server.reply_sse(wire("anthropic_stream_tool_use.sse"))

    events = list(provider_for(server).stream(CONVERSATION))

    assert events[:-1] == [TextDelta(text="Let me"), TextDelta(text=" count them.")]
    assert events[-1] == StreamDone(response=Response(
        message=Message(role="assistant", content=(
            TextBlock(text="Let me count them."),
            ToolUseBlock(id="toolu_01T1x1fJ34qAmk2tNTrN7Up6", name="word_count",
                         input={"text": "one two three"}),
        )),
        stop_reason="tool_use",
        usage=Usage(input_tokens=472, output_tokens=89, cache_read_tokens=1024),
        model=MODEL,
    ))
    assert server.bodies[0]["stream"] is True


def test_a_stream_answered_with_a_whole_message_is_a_readable_error(server):
    server.reply(200, wire_json("anthropic_message_text.json"))  # a proxy that ignored stream: true

    with pytest.raises(ProviderError) as caught:
        list(provider_for(server).stream(CONVERSATION))

    assert "the stream held no" in str(caught.value) and caught.value.provider == "anthropic"


def test_an_overloaded_error_event_mid_stream(server):
    server.reply_sse(wire("anthropic_stream_overloaded.sse"))

    events = []
    with pytest.raises(ProviderOverloaded) as caught:
        for event in provider_for(server).stream(CONVERSATION):
            events.append(event)

    assert events == [TextDelta(text="Let me")]
    assert caught.value.status is None
    assert "Overloaded" in str(caught.value)


@pytest.mark.parametrize(("status", "payload", "error"), [
    (401, "anthropic_error_authentication.json", ProviderAuthError),
    (403, "anthropic_error_authentication.json", ProviderAuthError),
    (400, "anthropic_error_invalid_request.json", ProviderBadRequest),
    (404, "anthropic_error_invalid_request.json", ProviderBadRequest),
    (429, "anthropic_error_rate_limit.json", ProviderRateLimited),
    (529, "anthropic_error_overloaded.json", ProviderOverloaded),
    (500, "anthropic_error_api.json", ProviderUnavailable),
    (503, "anthropic_error_api.json", ProviderUnavailable),
])
def test_http_errors_map_to_hango_errors(server, status, payload, error):
    server.reply(status, wire_json(payload))

    with pytest.raises(error) as caught:
        provider_for(server).complete(CONVERSATION)

    assert type(caught.value) is error
    assert caught.value.status == status
    assert caught.value.provider == "anthropic"
    assert wire_json(payload)["error"]["message"] in str(caught.value)
    assert len(server.requests) == 1  # max_retries=0


def test_an_overloaded_body_on_another_status_is_overloaded(server):
    server.reply(502, wire_json("anthropic_error_overloaded.json"))

    with pytest.raises(ProviderOverloaded):
        provider_for(server).complete(CONVERSATION)


def test_the_api_key_never_appears_in_an_error(server):
    echo = {"type": "error", "error": {"type": "authentication_error",
                                       "message": f"invalid x-api-key: {KEY}"}}
    server.reply(401, echo)

    with pytest.raises(ProviderAuthError) as caught:
        provider_for(server).complete(CONVERSATION)

    assert KEY not in str(caught.value)
    assert "[redacted]" in str(caught.value)


def test_the_sdk_retries_an_overloaded_answer(server):
    server.reply(529, wire_json("anthropic_error_overloaded.json"), headers=FAST_RETRY)
    server.reply(200, wire_json("anthropic_message_text.json"))

    response = provider_for(server, max_retries=2).complete(CONVERSATION)

    assert response.message.text == "It has 3 words."
    assert len(server.requests) == 2
    assert server.bodies[0] == server.bodies[1]


@pytest.mark.parametrize(("status", "payload", "error"), [
    (529, "anthropic_error_overloaded.json", ProviderOverloaded),
    (503, "anthropic_error_api.json", ProviderUnavailable),
])
def test_retries_exhausted(server, status, payload, error):
    for _ in range(3):
        server.reply(status, wire_json(payload), headers=FAST_RETRY)

    with pytest.raises(error) as caught:
        provider_for(server, max_retries=2).complete(CONVERSATION)

    assert caught.value.retryable
    assert len(server.requests) == 3  # the first try and two retries


def test_nothing_listening_is_unavailable(closed_port_url):
    settings = ProviderSettings(anthropic_api_key=KEY, anthropic_base_url=closed_port_url,
                                max_retries=0, timeout_seconds=2.0)

    with pytest.raises(ProviderUnavailable) as caught:
        AnthropicProvider(settings=settings).complete(CONVERSATION)

    assert caught.value.status is None


def test_a_missing_key_says_how_to_run_offline():
    with pytest.raises(ProviderAuthError) as caught:
        AnthropicProvider(settings=ProviderSettings())

    assert "ANTHROPIC_API_KEY" in str(caught.value)
    assert "scripted:demo" in str(caught.value)


def test_the_key_may_come_from_the_environment(server, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "env-key")
    server.reply(200, wire_json("anthropic_message_text.json"))

    AnthropicProvider(settings=ProviderSettings(anthropic_base_url=server.url)).complete(
        CONVERSATION)

    assert "env-key" in str(server.requests[0].headers)


def test_resolved_from_a_model_string_with_its_capabilities():
    provider, name = resolve_provider(
        f"anthropic:{MODEL}", ProviderSettings(anthropic_api_key=KEY))

    assert name == MODEL
    assert provider.name == "anthropic"
    assert isinstance(provider, Provider)
    assert isinstance(provider, TokenCounter)
    assert isinstance(provider, Streaming)
