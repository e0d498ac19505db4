"""harness.loop with a DeltaSink: the provider's stream is consumed inside the innermost model
handler, its text deltas go to the sink, and everything else is as without streaming."""

from __future__ import annotations

from collections.abc import Iterator

from harness.errors import ProviderUnavailable
from harness.messages import Message, Request, Response
from harness.providers.base import StreamDone, StreamEvent, Streaming, TextDelta, TokenCounter
from harness.providers.budgeted import Budgeted
from harness.providers.scripted import ScriptedModel, named_script, text, tool_call
from harness.state import State
from harness.steps import Failed, FinalOutput
from harness.tokens.tokenizers import tokenizer_for
from tests.support.doubles import Recording
from tests.support.harness import Deltas, make_loop, run


def test_each_turn_streams_its_text_and_the_deltas_join_to_the_stored_message():
    deltas = Deltas()
    step, state, recorder = run(make_loop(named_script("demo"), deltas=deltas),
                                State(messages=[Message.user("count these four words")]))
    assert step == FinalOutput("end_turn")
    assistant = {r.turn: r.messages[0] for r in recorder.results}
    # Turn 1 prefaces its plan, turn 5 answers; the turns between only call tools.
    assert deltas.turns() == [1, 5]
    for turn in deltas.turns():
        assert deltas.text_of(turn) == assistant[turn].text
        indexes = [i for t, i, _ in deltas.seen if t == turn]
        assert indexes == list(range(len(indexes)))
    assert len([i for t, i, _ in deltas.seen if t == 5]) > 5  # word by word
    # Each stream's end is told, after its deltas.
    assert deltas.ends == [(t, len([1 for s, _, _ in deltas.seen if s == t])) for t in (1, 5)]


def test_the_chain_wraps_one_model_call_however_many_deltas_it_streams():
    log: list[str] = []
    deltas = Deltas()
    model = ScriptedModel([text("one two three four five six")])
    run(make_loop(model, deltas=deltas, middlewares=[Recording("outer", log)]))
    assert len(deltas.seen) == 6
    assert log == ["enter:outer", "exit:outer"]


def test_without_a_sink_a_streaming_provider_is_called_whole():
    calls: list[str] = []

    class Both(ScriptedModel):
        def complete(self, request: Request) -> Response:
            calls.append("complete")
            return super().complete(request)

        def stream(self, request: Request) -> Iterator[StreamEvent]:
            calls.append("stream")
            return super().stream(request)

    run(make_loop(Both([text("hello there")])))
    assert calls == ["complete"]
    run(make_loop(Both([text("hello there")]), deltas=Deltas()))
    assert calls == ["complete", "stream", "complete"]  # stream() answers with complete()'s step


class Whole:
    """A provider that cannot stream."""

    name = "whole"

    def complete(self, request: Request) -> Response:
        return text("all at once")


def test_a_provider_that_does_not_stream_answers_whole_and_sends_no_delta():
    deltas = Deltas()
    step, state, _ = run(make_loop(Whole(), deltas=deltas))
    assert step == FinalOutput("end_turn") and state.messages[-1].text == "all at once"
    assert deltas.seen == []


class Reserving:
    def __init__(self) -> None:
        self.held: list[int] = []

    def reserve(self, tokens: int) -> None:
        self.held.append(tokens)


def test_budgeted_passes_the_stream_through_and_holds_once_per_call():
    budget = Reserving()
    inner = ScriptedModel([tool_call("echo", {"text": "x"}, preface="Echo it."),
                           text("Done now.")])
    provider = Budgeted(inner, budget, tokenizer_for("scripted:demo"))
    assert isinstance(provider, Streaming)
    deltas = Deltas()
    step, _, _ = run(make_loop(provider, deltas=deltas))
    assert step == FinalOutput("end_turn")
    assert len(budget.held) == 2 and all(h > 0 for h in budget.held)
    assert [deltas.text_of(1), deltas.text_of(2)] == ["Echo it.", "Done now."]


def test_budgeted_over_a_provider_that_does_not_stream_streams_its_whole_answer():
    budget = Reserving()
    events = list(Budgeted(Whole(), budget, tokenizer_for("scripted:demo"))
                  .stream(Request(model="m", messages=(Message.user("hi"),))))
    assert [type(e) for e in events] == [StreamDone] and len(budget.held) == 1


class Broken:
    """Streams a delta, then fails (or just stops, without its final response)."""

    name = "broken"

    def __init__(self, error: Exception | None) -> None:
        self.error = error

    def complete(self, request: Request) -> Response:  # pragma: no cover - never called
        raise AssertionError

    def stream(self, request: Request) -> Iterator[StreamEvent]:
        yield TextDelta(text="Half a ")
        if self.error is not None:
            raise self.error


def test_a_stream_that_fails_midway_fails_the_run_readably():
    deltas = Deltas()
    step, state, recorder = run(make_loop(
        Broken(ProviderUnavailable("Anthropic API error (mid-stream): overloaded")),
        deltas=deltas))
    assert step == Failed("provider_unavailable", "Anthropic API error (mid-stream): overloaded")
    assert deltas.seen == [(1, 0, "Half a ")] and deltas.ends == [(1, 1)]
    assert recorder.results[-1].messages == ()  # nothing of the half answer is stored


def test_a_stream_without_its_final_response_fails_the_run():
    step, _, _ = run(make_loop(Broken(None), deltas=Deltas()))
    assert isinstance(step, Failed) and step.code == "provider_error"
    assert "without its final response" in step.message


def test_a_stream_without_text_tells_no_end():
    deltas = Deltas()
    run(make_loop(ScriptedModel([tool_call("echo", {"text": "x"}), text("")]), deltas=deltas))
    assert deltas.seen == [] and deltas.ends == []


class Counting(Whole):
    def count_tokens(self, request: Request) -> int:
        return 42


def test_budgeted_counts_with_the_inner_counter_and_holds_nothing_for_it():
    """A run under a quota measures its requests as a run without one does."""
    budget = Reserving()
    counted = Budgeted(Counting(), budget, tokenizer_for("scripted:demo"))
    assert isinstance(counted, TokenCounter)
    assert counted.count_tokens(Request(model="m", messages=(Message.user("hi"),))) == 42
    assert budget.held == []
    assert not isinstance(Budgeted(Whole(), budget, tokenizer_for("scripted:demo")),
                          TokenCounter)
