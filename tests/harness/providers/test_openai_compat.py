"""The OpenAI-compatible adapter against recorded chat-completions payloads over local HTTP."""

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
from harness.providers import openai_wire, resolve_provider
from harness.providers.base import (
    Provider,
    ProviderSettings,
    StreamDone,
    Streaming,
    TextDelta,
    TokenCounter,
)
from harness.providers.openai_compat import OpenAICompatProvider
from tests.support.replay import FAST_RETRY, wire, wire_json

KEY = "test-key"
MODEL = "gpt-4o-mini"
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
        Message.user("How many words in 'one two three' and 'four five'?"),
        Message(role="assistant", content=(
            TextBlock(text="Let me count them."),
            ToolUseBlock(id="call_1", name="word_count", input={"text": "one two three"}),
            ToolUseBlock(id="call_2", name="word_count", input={"text": "four five"}),
        )),
        Message(role="user", content=(
            TextBlock(text="Be quick.", cache_control=CacheControl()),
            ToolResultBlock(tool_use_id="call_1", content="3"),
            ToolResultBlock(tool_use_id="call_2", content="boom", is_error=True),
        )),
    ),
    tools=(WORD_COUNT,),
    max_tokens=1024,
)


def provider_for(server, **settings) -> OpenAICompatProvider:
    settings = {"openai_api_key": KEY, "openai_base_url": server.url, "max_retries": 0,
                "timeout_seconds": 5.0, **settings}
    return OpenAICompatProvider(settings=ProviderSettings(**settings))


def test_request_maps_to_chat_completions(server):
    server.reply(200, wire_json("openai_completion_text.json"))

    provider_for(server).complete(CONVERSATION)

    [sent] = server.requests
    assert (sent.method, sent.path) == ("POST", "/chat/completions")
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert sent.body == {
        "model": MODEL,
        "max_tokens": 1024,
        "messages": [
            {"role": "system", "content": "You are terse.\n\nTools: word_count."},
            {"role": "user", "content": "How many words in 'one two three' and 'four five'?"},
            {"role": "assistant", "content": "Let me count them.", "tool_calls": [
                {"id": "call_1", "type": "function",
                 "function": {"name": "word_count", "arguments": '{"text": "one two three"}'}},
                {"id": "call_2", "type": "function",
                 "function": {"name": "word_count", "arguments": '{"text": "four five"}'}},
            ]},
            # Tool messages directly after the calling assistant message, the user's text after.
            {"role": "tool", "tool_call_id": "call_1", "content": "3"},
            # The wire has no is_error: a failed result says so in its content.
            {"role": "tool", "tool_call_id": "call_2", "content": "Error: boom"},
            {"role": "user", "content": "Be quick."},
        ],
        "tools": [{"type": "function", "function": {
            "name": "word_count",
            "description": "Count the words in a text.",
            "parameters": {"type": "object", "properties": {"text": {"type": "string"}},
                           "required": ["text"]},
        }}],
    }


def test_tool_calls_only_and_temperature(server):
    server.reply(200, wire_json("openai_completion_text.json"))
    request = Request(model=MODEL, temperature=0.2, messages=(
        Message.user("Count."),
        Message(role="assistant", content=(
            ToolUseBlock(id="call_1", name="word_count", input={"text": "né"}),)),
        Message(role="user", content=(ToolResultBlock(tool_use_id="call_1", content="1"),)),
    ))

    provider_for(server).complete(request)

    body = server.bodies[0]
    assert body["temperature"] == 0.2
    assert body["messages"][1:] == [
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "word_count", "arguments": '{"text": "né"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "1"},
    ]
    assert "tools" not in body


def test_response_maps_text_tool_calls_and_cached_usage(server):
    server.reply(200, wire_json("openai_completion_tool_calls.json"))

    response = provider_for(server).complete(CONVERSATION)

    assert response == Response(
        message=Message(role="assistant", content=(
            TextBlock(text="Let me count them."),
            ToolUseBlock(id="call_12345xyz", name="word_count", input={"text": "one two three"}),
            # Unparseable arguments are kept whole for the tool's validation to report.
            ToolUseBlock(id="call_67890abc", name="word_count",
                         input={"_raw_arguments": '{"text": "unterminated'}),
        )),
        stop_reason="tool_use",
        usage=Usage(input_tokens=1117 - 1024, output_tokens=46, cache_read_tokens=1024),
        model="gpt-4o-mini-2024-07-18",
    )


@pytest.mark.parametrize(("finish_reason", "stop_reason"), [
    ("stop", "end_turn"),
    ("tool_calls", "tool_use"),
    ("length", "max_tokens"),
    ("content_filter", "refusal"),
])
def test_finish_reasons(server, finish_reason, stop_reason):
    completion = wire_json("openai_completion_text.json")
    completion["choices"][0]["finish_reason"] = finish_reason
    server.reply(200, completion)

    response = provider_for(server).complete(CONVERSATION)

    assert response.stop_reason == stop_reason
    assert response.usage == Usage(input_tokens=19, output_tokens=10)


def test_a_refusal_is_the_answer(server):
    completion = wire_json("openai_completion_text.json")
    completion["choices"][0]["message"].update(content=None, refusal="I can't help with that.")
    server.reply(200, completion)

    response = provider_for(server).complete(CONVERSATION)

    assert response.message.text == "I can't help with that."
    assert response.stop_reason == "refusal"


def test_stream_accumulates_text_and_tool_call_fragments(server):
    server.reply_sse(wire("openai_stream_tool_calls.sse"))

    events = list(provider_for(server).stream(CONVERSATION))

    assert events[:-1] == [TextDelta(text="Let me"), TextDelta(text=" count them.")]
    assert events[-1] == StreamDone(response=Response(
        message=Message(role="assistant", content=(
            TextBlock(text="Let me count them."),
            ToolUseBlock(id="call_DdmO9pD3xa9XTPNJ32zg2hcA", name="word_count",
                         input={"text": "one two three"}),
        )),
        stop_reason="tool_use",
        usage=Usage(input_tokens=1117 - 1024, output_tokens=46, cache_read_tokens=1024),
        model="gpt-4o-mini-2024-07-18",
    ))
    body = server.bodies[0]
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}


def test_a_stream_answered_with_a_whole_message_is_a_readable_error(server):
    server.reply(200, wire_json("openai_completion_text.json"))  # a proxy that ignored stream: true

    with pytest.raises(ProviderError) as caught:
        list(provider_for(server).stream(CONVERSATION))

    assert "the stream held no" in str(caught.value) and caught.value.provider == "openai"


def test_a_stream_cut_by_max_tokens_still_ends_with_a_response(server):
    chunk = ('{"id":"c","object":"chat.completion.chunk","created":1,"model":"m",'
             '"choices":[{"index":0,"delta":{"content":"trunc"},"finish_reason":"length"}]}')
    server.reply_sse(f"data: {chunk}\n\ndata: [DONE]\n\n".encode())

    *_, done = provider_for(server).stream(CONVERSATION)

    assert done.response.stop_reason == "max_tokens"
    assert done.response.message.text == "trunc"
    assert done.response.usage == Usage()  # a server that ignores include_usage


@pytest.mark.parametrize(("status", "payload", "error"), [
    (401, "openai_error_invalid_api_key.json", ProviderAuthError),
    (403, "openai_error_invalid_api_key.json", ProviderAuthError),
    (400, "openai_error_bad_request.json", ProviderBadRequest),
    (404, "openai_error_bad_request.json", ProviderBadRequest),
    (429, "openai_error_rate_limit.json", ProviderRateLimited),
    (500, "openai_error_server.json", ProviderUnavailable),
    (503, "openai_error_server.json", ProviderUnavailable),
    (529, "openai_error_server.json", ProviderOverloaded),
])
def test_http_errors_map_to_hango_errors(server, status, payload, error):
    server.reply(status, wire_json(payload))

    with pytest.raises(error) as caught:
        provider_for(server).complete(CONVERSATION)

    assert type(caught.value) is error
    assert caught.value.status == status
    assert caught.value.provider == "openai"
    assert len(server.requests) == 1  # max_retries=0


def test_the_api_key_never_appears_in_an_error(server):
    # OpenAI's own 401 quotes the rejected key back.
    server.reply(401, wire_json("openai_error_invalid_api_key.json"))

    with pytest.raises(ProviderAuthError) as caught:
        provider_for(server).complete(CONVERSATION)

    assert KEY not in str(caught.value)
    assert "Incorrect API key provided: [redacted]" in str(caught.value)


def test_the_sdk_retries_an_unavailable_server(server):
    server.reply(503, wire_json("openai_error_server.json"), headers=FAST_RETRY)
    server.reply(200, wire_json("openai_completion_text.json"))

    response = provider_for(server, max_retries=2).complete(CONVERSATION)

    assert response.message.text == "It has 3 words."
    assert len(server.requests) == 2
    assert server.bodies[0] == server.bodies[1]


def test_retries_exhausted(server):
    for _ in range(3):
        server.reply(503, wire_json("openai_error_server.json"), headers=FAST_RETRY)

    with pytest.raises(ProviderUnavailable) as caught:
        provider_for(server, max_retries=2).complete(CONVERSATION)

    assert caught.value.retryable
    assert len(server.requests) == 3


def test_nothing_listening_is_unavailable(closed_port_url):
    settings = ProviderSettings(openai_api_key=KEY, openai_base_url=closed_port_url,
                                max_retries=0, timeout_seconds=2.0)

    with pytest.raises(ProviderUnavailable):
        OpenAICompatProvider(settings=settings).complete(CONVERSATION)


@pytest.mark.parametrize("base_url", [None, "https://api.openai.com/v1/"])
def test_a_missing_key_for_openai_says_how_to_run_offline(base_url):
    with pytest.raises(ProviderAuthError) as caught:
        OpenAICompatProvider(settings=ProviderSettings(openai_base_url=base_url))

    assert "OPENAI_API_KEY" in str(caught.value)
    assert "scripted:demo" in str(caught.value)


def test_a_local_server_needs_no_key(server):
    server.reply(200, wire_json("openai_completion_text.json"))

    OpenAICompatProvider(settings=ProviderSettings(openai_base_url=server.url)).complete(
        CONVERSATION)

    assert server.requests[0].headers["authorization"] == "Bearer not-needed"


def test_key_and_base_url_may_come_from_the_environment(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "env-key")
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    server.reply(200, wire_json("openai_completion_text.json"))

    OpenAICompatProvider(settings=ProviderSettings()).complete(CONVERSATION)

    assert server.requests[0].headers["authorization"] == "Bearer env-key"


def test_resolved_from_a_model_string_with_its_capabilities():
    provider, name = resolve_provider(f"openai:{MODEL}", ProviderSettings(openai_api_key=KEY))

    assert name == MODEL
    assert provider.name == "openai"
    assert isinstance(provider, Provider)
    assert isinstance(provider, Streaming)
    assert isinstance(provider, TokenCounter)


def test_count_tokens_asks_the_input_token_endpoint_with_the_same_content(server):
    server.reply(200, wire_json("openai_input_tokens.json"))

    assert provider_for(server).count_tokens(CONVERSATION) == 118

    [sent] = server.requests
    assert (sent.method, sent.path) == ("POST", "/responses/input_tokens")
    assert sent.body["model"] == MODEL
    # The chat request's messages as Responses items: the system and user texts, the calls
    # and their results as items of their own (a failed result marked as the chat wire marks it).
    assert sent.body["input"] == [
        {"role": "system", "content": "You are terse.\n\nTools: word_count."},
        {"role": "user", "content": "How many words in 'one two three' and 'four five'?"},
        {"role": "assistant", "content": "Let me count them."},
        {"type": "function_call", "call_id": "call_1", "name": "word_count",
         "arguments": '{"text": "one two three"}'},
        {"type": "function_call", "call_id": "call_2", "name": "word_count",
         "arguments": '{"text": "four five"}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "3"},
        {"type": "function_call_output", "call_id": "call_2", "output": "Error: boom"},
        {"role": "user", "content": "Be quick."},
    ]
    assert sent.body["tools"] == [{"type": "function", "name": WORD_COUNT.name,
                                   "description": WORD_COUNT.description,
                                   "parameters": WORD_COUNT.input_schema, "strict": False}]


def test_a_server_without_the_count_endpoint_is_asked_once(server):
    server.reply(404, {"error": {"message": "Not Found"}})
    provider = provider_for(server)

    for _ in range(2):
        with pytest.raises(ProviderError):
            provider.count_tokens(CONVERSATION)
    assert len(server.requests) == 1  # the run's later calls do not ask again


def test_a_count_answer_without_a_count_is_a_provider_error(server):
    server.reply(200, {"object": "response.input_tokens"})

    with pytest.raises(ProviderError, match="no token count"):
        provider_for(server).count_tokens(CONVERSATION)


@pytest.mark.parametrize(("block", "content"), [
    (ToolResultBlock(tool_use_id="c", content="3"), "3"),
    (ToolResultBlock(tool_use_id="c", content="rejected: too risky", is_error=True),
     "Error: rejected: too risky"),
    (ToolResultBlock(tool_use_id="c", content="", is_error=True), "Error"),
])
def test_a_failed_result_is_marked_in_its_content(block, content):
    assert openai_wire.tool_result_content(block) == content
    sent = openai_wire.as_sent(block)
    assert (sent.content, sent.is_error) == (content, False)
