"""harness.streamed: a cancel stops a streamed call in flight and its usage is counted; a failed
call's run error is a short first line, its whole answer kept in a ``model.failed`` event."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from harness.chain import Chain
from harness.errors import ProviderBadRequest, ProviderUnavailable
from harness.loop import Loop
from harness.messages import Message, Request, Response, TextBlock, Usage
from harness.providers.abort import CallAbort
from harness.providers.base import ProviderSettings
from harness.providers.openai_compat import OpenAICompatProvider
from harness.providers.scripted import ScriptedModel, text
from harness.state import State
from harness.steps import Failed, FinalOutput, Interrupted
from harness.streamed import ERROR_LINE_CHARS, EVENT_MODEL_FAILED, accounted
from harness.tokens.tokenizers import tokenizer_for
from tests.support.harness import Deltas, make_agent, make_loop, run
from tests.support.replay import ReplayServer


@pytest.fixture
def server():
    replay = ReplayServer()
    yield replay
    replay.close()


WORDS = " ".join(f"word{i}" for i in range(40))


class AbortsAfter:
    """A control whose cancel arrives ``seconds`` into the streamed call, from another thread
    (as the server's watch sees it)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.cancelled = False

    def cancel_requested(self) -> bool:
        return self.cancelled

    def abort_on_cancel(self, handle: CallAbort) -> Callable[[], None]:
        def fire() -> None:
            self.cancelled = True
            handle.abort()

        timer = threading.Timer(self.seconds, fire)
        timer.start()
        return timer.cancel


def test_a_cancel_stops_the_stream_and_records_what_it_used():
    deltas = Deltas()
    model = ScriptedModel([text(WORDS)], word_delay_ms=30)
    loop = make_loop(model, deltas=deltas, prints=tokenizer_for("openai:gpt-4o"))

    step, state, recorder = run(loop, State(messages=[Message.user("Write forty words.")]),
                                control=AbortsAfter(0.2))

    assert step == Interrupted("cancelled")
    assert 0 < len(deltas.seen) < 40  # stopped mid-answer
    [result] = recorder.results
    assert result.messages == ()  # the cut answer is not kept
    [call] = result.usage
    counter = tokenizer_for("openai:gpt-4o")
    assert call.usage.input_tokens > 0
    assert call.usage.output_tokens == counter.text(deltas.text_of(1))


def test_a_call_not_cancelled_is_answered_as_before():
    deltas = Deltas()
    step, _, recorder = run(make_loop(ScriptedModel([text("all of it")]), deltas=deltas),
                            control=AbortsAfter(5))
    assert step == FinalOutput("end_turn")
    assert deltas.text_of(1) == "all of it"


def test_a_provider_error_fails_the_run_with_its_first_line_and_keeps_it_whole():
    dump = ("OpenAI API error (HTTP 500): 7 validation errors for list[...]\n"
            + "messages.1.content\n  Input should be a valid string\n" * 60)
    step, _, recorder = run(make_loop(ScriptedModel([ProviderBadRequest(
        dump, status=500, provider="openai")])))

    assert step == Failed("provider_bad_request",
                          "OpenAI API error (HTTP 500): 7 validation errors for list[...]")
    [event] = [data for kind, data in recorder.results[-1].events if kind == EVENT_MODEL_FAILED]
    assert event == {"code": "provider_bad_request", "provider": "openai", "status": 500,
                     "message": dump}


def test_a_long_first_line_is_cut():
    step, _, _ = run(make_loop(ScriptedModel([ProviderUnavailable("x" * 5000)])))
    assert isinstance(step, Failed)
    assert len(step.message) == ERROR_LINE_CHARS and step.message.endswith("…")


@pytest.mark.parametrize("streamed", [True, False])
def test_an_answer_without_usage_is_counted_never_zero(server, streamed):
    if streamed:  # a server that ignores stream_options.include_usage: no usage chunk
        server.reply_sse(b'data: {"id":"c","object":"chat.completion.chunk","created":1,'
                         b'"model":"m","choices":[{"index":0,"delta":{"content":"Three words '
                         b'here."},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n')
    else:  # a whole completion without its usage field
        server.reply(200, {"id": "c", "object": "chat.completion", "created": 1, "model": "m",
                           "choices": [{"index": 0, "finish_reason": "stop", "message": {
                               "role": "assistant", "content": "Three words here."}}]})
    provider = OpenAICompatProvider(settings=ProviderSettings(
        openai_base_url=server.url, max_retries=0))
    loop = Loop(agent=make_agent(), chain=Chain.build([]), provider=provider,
                model="gpt-4o-mini", tools=[], deltas=Deltas() if streamed else None)

    step, _, recorder = run(loop, State(messages=[Message.user("Say three words.")]))

    assert step == FinalOutput("end_turn")
    [call] = recorder.results[0].usage
    counter = tokenizer_for("openai:gpt-4o-mini")
    assert call.source == "counted"
    assert call.usage.input_tokens == counter.request(server_request(server, counter)) > 0
    assert call.usage.output_tokens == counter.text("Three words here.") > 0


def server_request(server, counter) -> Request:
    """The request the server got, as hango's value (a system and a user message)."""
    [sent] = server.bodies
    system, user = sent["messages"]
    assert (system["role"], user["role"]) == ("system", "user") and "tools" not in sent
    return Request(model="gpt-4o-mini", system=(TextBlock(text=system["content"]),),
                   messages=(Message.user(user["content"]),), max_tokens=sent["max_tokens"])


def test_without_a_family_tokenizer_the_count_is_an_estimate():
    response = Response(message=Message(role="assistant", content=(TextBlock(text="hi"),)),
                        stop_reason="end_turn")
    request = Request(model="x", messages=(Message.user("hello"),), max_tokens=5)
    usage, source = accounted(request, response, tokenizer_for("openai-compatible:unknown"))
    assert source == "estimated" and usage.input_tokens > 0 and usage.output_tokens > 0
    provided = Response(message=response.message, stop_reason="end_turn",
                        usage=Usage(input_tokens=7, output_tokens=1))
    assert accounted(request, provided, tokenizer_for("openai:gpt-4o")) == (
        Usage(input_tokens=7, output_tokens=1), "provider")
