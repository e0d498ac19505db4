"""The adapters against what OpenAI-compatible servers teams run accept and send: request
bodies validated as those servers' documented models do (tests/support/wire_models.py), a
validation error not retried, a stream that ends without its end, and a call aborted in flight.
"""

from __future__ import annotations

import json
import threading

import httpx2
import pytest

from harness.errors import ProviderBadRequest, ProviderUnavailable
from harness.messages import Message, Request, TextBlock, ToolResultBlock, ToolUseBlock
from harness.providers import abort
from harness.providers.anthropic import AnthropicProvider
from harness.providers.base import ProviderSettings, StreamDone, TextDelta
from harness.providers.openai_compat import OpenAICompatProvider
from tests.support import wire_models
from tests.support.replay import FAST_RETRY, ReplayServer, wire, wire_json

TOOL_ROUND_TRIP = Request(
    model="gemma-3-270m",
    system=(TextBlock(text="You are terse."),),
    messages=(
        Message.user("How many words in 'one two three'?"),
        Message(role="assistant", content=(
            ToolUseBlock(id="call_1", name="word_count", input={"text": "one two three"}),)),
        Message(role="user", content=(ToolResultBlock(tool_use_id="call_1", content="3"),)),
    ),
    max_tokens=64,
)


def openai_for(url: str, **settings) -> OpenAICompatProvider:
    return OpenAICompatProvider(settings=ProviderSettings(**{
        "openai_base_url": url, "max_retries": 0, "timeout_seconds": 10.0, **settings}))


def anthropic_for(url: str, **settings) -> AnthropicProvider:
    return AnthropicProvider(settings=ProviderSettings(**{
        "anthropic_api_key": "test-key", "anthropic_base_url": url, "max_retries": 0,
        "timeout_seconds": 10.0, **settings}))


# Past the abort tests' guard against a hang (60 s): only the abort can end their read first.
PATIENT = {"timeout_seconds": 300.0}


@pytest.fixture
def validating():
    servers: list[ReplayServer] = []

    def make(validate) -> ReplayServer:
        servers.append(ReplayServer(validate=validate))
        return servers[-1]

    yield make
    for server in servers:
        server.close()


def chunk(delta: dict, finish: str | None = None) -> str:
    return "data: " + json.dumps({
        "id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}) + "\n\n"


# -- the assistant's tool-call message ----------------------------------------------------


def test_the_validators_refuse_what_their_servers_refuse(validating):
    """The llama-cpp-python model refuses ``content: null`` beside tool calls, as the server
    did; the others take it. (So the next test's acceptance means something.)"""
    strict = validating(wire_models.llama_cpp_python)
    lenient = validating(wire_models.nullable)
    body = {"model": "m", "messages": wire_models.NULL_CONTENT}
    lenient.reply(200, wire_json("openai_completion_text.json"))
    refused = httpx2.post(strict.url + "/chat/completions", json=body)
    taken = httpx2.post(lenient.url + "/chat/completions", json=body)
    assert refused.status_code == 500 and "Input should be a valid string" in refused.text
    assert taken.status_code == 200


@pytest.mark.parametrize("validate", [wire_models.llama_cpp_python, wire_models.nullable])
def test_a_tool_call_round_trip_is_accepted(validating, validate):
    server = validating(validate)
    server.reply(200, wire_json("openai_completion_text.json"))

    response = openai_for(server.url).complete(TOOL_ROUND_TRIP)

    assert response.message.text == "It has 3 words."
    assert server.bodies[0]["messages"][2]["content"] == ""


# -- a request refused as invalid ----------------------------------------------------------


@pytest.mark.parametrize("validate", [wire_models.refusing,
                                      wire_models.fastapi_detail(500, refuse_all=True),
                                      wire_models.fastapi_detail(422, refuse_all=True)])
def test_a_validation_error_is_not_retried(validating, validate):
    server = validating(validate)

    with pytest.raises(ProviderBadRequest) as caught:
        openai_for(server.url, max_retries=3).complete(TOOL_ROUND_TRIP)

    assert len(server.requests) == 1  # not sent again: the same body is refused each time
    assert not caught.value.retryable
    assert "Input should be a valid string" in str(caught.value)


def test_a_plain_server_error_is_still_retried(validating):
    server = validating(None)
    server.reply(500, {"error": {"message": "CUDA out of memory"}}, headers=FAST_RETRY)
    server.reply(200, wire_json("openai_completion_text.json"))

    openai_for(server.url, max_retries=2).complete(TOOL_ROUND_TRIP)

    assert len(server.requests) == 2


def test_an_anthropic_validation_error_is_not_retried(validating):
    server = validating(None)
    for _ in range(3):
        server.reply(500, {"detail": [{"loc": ["body", "max_tokens"], "msg": "Field required",
                                       "type": "missing"}]}, headers=FAST_RETRY)

    with pytest.raises(ProviderBadRequest) as caught:
        AnthropicProvider(settings=ProviderSettings(
            anthropic_api_key="test-key", anthropic_base_url=server.url, max_retries=2,
        )).complete(TOOL_ROUND_TRIP)

    assert len(server.requests) == 1
    assert "the request is invalid: max_tokens: Field required" in str(caught.value)


# -- a stream that ends without its end ------------------------------------------------------


def test_an_openai_stream_cut_without_finish_reason_is_an_error(server):
    server.reply_sse((chunk({"role": "assistant", "content": ""}) + chunk({"content": "Half"})
                      + chunk({"content": " an answer"})).encode())

    events = []
    with pytest.raises(ProviderUnavailable) as caught:
        events.extend(openai_for(server.url).stream(TOOL_ROUND_TRIP))

    assert caught.value.retryable
    assert "after 2 deltas of the answer" in str(caught.value)
    assert "no response" not in str(caught.value)


@pytest.mark.parametrize("body", [
    chunk({"content": "Whole"}) + "data: [DONE]\n\n",  # a [DONE] says the stream is over
    chunk({"content": "Whole"}) + chunk({}, "stop"),  # a finish_reason says the answer is
])
def test_an_openai_stream_with_either_end_is_an_answer(server, body):
    server.reply_sse(body.encode())

    *_, done = openai_for(server.url).stream(TOOL_ROUND_TRIP)

    assert isinstance(done, StreamDone) and done.response.message.text == "Whole"


def test_an_anthropic_stream_cut_without_message_stop_is_an_error(server):
    whole = wire("anthropic_stream_text.sse").decode()
    server.reply_sse(whole[:whole.index("event: content_block_stop")].encode())

    with pytest.raises(ProviderUnavailable) as caught:
        list(anthropic_for(server.url).stream(TOOL_ROUND_TRIP))

    assert "after 3 deltas of the answer without message_stop" in str(caught.value)


# -- a call aborted in flight ----------------------------------------------------------------


def slow_openai_stream() -> bytes:
    return (chunk({"role": "assistant", "content": ""})
            + "".join(chunk({"content": f" w{i}"}) for i in range(50))
            + chunk({}, "stop") + "data: [DONE]\n\n").encode()


def slow_anthropic_stream() -> bytes:
    whole = wire("anthropic_stream_text.sse").decode()
    head, tail = whole.split("event: content_block_stop")
    delta = ('event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
             '"delta":{"type":"text_delta","text":" more"}}\n\n')
    return (head + delta * 50 + "event: content_block_stop" + tail).encode()


def read_in_thread(stream, handle: abort.CallAbort) -> tuple[threading.Thread, list[object]]:
    """Read ``stream()`` on a thread under ``handle``: every event, then what it ended with."""
    got: list[object] = []

    def read() -> None:
        with abort.current(handle):
            try:
                got.extend(stream())
            except Exception as exc:  # noqa: BLE001 - what the read ended with is the point
                got.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return reader, got


@pytest.mark.parametrize(("make", "body"), [(openai_for, slow_openai_stream),
                                            (anthropic_for, slow_anthropic_stream)])
def test_an_abort_stops_a_stream_blocked_on_its_read(server, make, body):
    # The server writes one event, then holds the stream until the test releases it: the
    # reader can only end before that release if the abort woke its blocked read.
    server.reply_sse(body(), hold_after=1)
    handle = abort.CallAbort()
    reader, got = read_in_thread(lambda: make(server.url, **PATIENT).stream(TOOL_ROUND_TRIP),
                                 handle)
    assert server.holding.wait(timeout=60), "the stream was never opened"

    handle.abort()
    reader.join(timeout=60)  # a guard against a hang only: without the abort it never ends

    assert not reader.is_alive(), "the abort did not wake the read blocked on its socket"
    assert server.events_sent == 1  # ended while the server still held the stream
    assert not any(isinstance(e, StreamDone) for e in got)
    assert isinstance(got[-1], ProviderUnavailable)  # the loop, seeing the abort, cancels


def test_an_abort_before_the_stream_opens_closes_it_at_once(server):
    server.reply_sse(slow_openai_stream(), hold_after=1)
    handle = abort.CallAbort()
    handle.abort()

    reader, got = read_in_thread(
        lambda: openai_for(server.url, **PATIENT).stream(TOOL_ROUND_TRIP), handle)
    reader.join(timeout=60)  # a guard against a hang only

    assert not reader.is_alive(), "an aborted call still waits on its stream"
    assert server.events_sent <= 1  # closed without waiting for the held part of the stream
    assert not any(isinstance(e, TextDelta) and e.text.strip() for e in got)
    assert isinstance(got[-1], ProviderUnavailable)
