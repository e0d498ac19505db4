"""SummarizationMiddleware: capture-only mode, failures, telemetry and configuration."""

from __future__ import annotations

import pytest

from harness import telemetry
from harness.chain import Chain
from harness.deps import RunDeps, StackConfig
from harness.errors import ConfigurationError
from harness.history import is_summary
from harness.messages import (
    Message,
    Response,
)
from harness.middleware import summarization
from harness.middleware.summarization import SummarizationMiddleware
from harness.providers.scripted import ScriptedModel, named_script
from harness.stack import default_stack
from harness.state import State, state_to_json
from harness.steps import Failed, FinalOutput
from harness.stores import Summary
from tests.support.harness import events_named, make_agent, run, spans_named
from tests.support.summarization import (
    MemorySummaries,
    Recording,
    SummariesFail,
    answers,
    make,
    purposes,
    reports,
    size,
    small,
    stored_history,
)

# -- capture-only and failures -------------------------------------------------------------------


def capture(loop, state: State):
    """Assemble the next request through the chain and stop before the provider (inspect)."""
    captured = []

    def handler(req):
        captured.append(req)
        return Response(message=Message(role="assistant", content=()), stop_reason="end_turn")

    loop.chain.before_run(state)
    loop.chain.model_call(loop.prepare(state), handler)
    return captured[0].request


def test_capture_only_compacts_as_a_run_does_and_calls_nothing():
    history = stored_history()
    options = small(size(history) // 2, keep_messages=4)
    provider = answers()
    run(make(provider, options=options, store=MemorySummaries()), State(messages=list(history)))
    (sent,) = provider.run_requests  # what a run sends: a new summary, then what it keeps

    model = ScriptedModel([])  # any call raises ScriptExhausted
    store = MemorySummaries()
    loop = make(model, options=options, store=store, capture_only=True)
    state = State(messages=list(history))
    request = capture(loop, state)
    assert model.calls == [] and store.saved == []
    # The same cut; the summary a run would make first is sent empty, and said to be pending.
    assert request.messages[1:] == sent.messages[1:]
    assert is_summary(request.messages[0]) and request.messages[0].text.endswith(": ")
    report = summarization.report(state)
    assert report.would_compact and report.summary_pending
    assert (report.summary_outcome, report.summary_max_tokens) == ("created", 64)
    assert (report.summary_from_seq, report.summary_through_seq) == (1, history[-5].seq)
    state = State(messages=list(history[:3]))
    assert capture(loop, state).messages == tuple(history[:3])
    assert summarization.report(state).would_compact is False


def test_capture_only_reuses_the_stored_summary_as_a_run_would():
    history = stored_history()
    options = small(size(history) // 2, keep_messages=4)
    stored = Summary(text="the user asked for echoes", through_seq=history[-5].seq)
    loop = make(ScriptedModel([]), options=options, store=MemorySummaries(stored),
                capture_only=True)
    state = State(messages=list(history))
    request = capture(loop, state)
    assert request.messages[0].text.endswith(": the user asked for echoes")
    assert request.messages[1:] == tuple(history[-4:])
    report = summarization.report(state)
    assert (report.summary_outcome, report.summary_pending) == ("reused", False)


class Counting(ScriptedModel):
    def __init__(self, answer: int) -> None:
        super().__init__([])
        self.answer, self.counted = answer, 0

    def count_tokens(self, request) -> int:
        self.counted += 1
        return self.answer


@pytest.mark.parametrize("capture_only", [True, False], ids=["inspect", "run"])
def test_the_providers_counter_decides_near_the_budget_only(capture_only):
    """The inspector's would_compact is the run's: from 90 to 125% of the budget both ask the
    provider's counter; under it, or far over it, the tokenizer's count stands."""
    history = stored_history()

    def report(budget: int, answer: int) -> tuple[summarization.SummarizationReport, int]:
        counter = Counting(answer)
        state = State(messages=list(history))
        try:
            capture(make(counter, options=small(budget), capture_only=capture_only), state)
        except summarization.SummarizationFailed:  # a run's summarizer: a script of no steps
            assert not capture_only
        return summarization.report(state), counter.counted

    def measured(budget: int, answer: int) -> tuple[bool, int]:
        found, counted = report(budget, answer)
        return found.would_compact, counted

    whole = report(10 ** 7, 0)[0].tokens  # the tokenizer's count, the tools and system too
    assert measured(whole, 10 ** 6) == (True, 1)  # near: the counter says over
    assert measured(whole, 1) == (False, 1)  # near: the counter says under
    assert measured(4 * whole, 10 ** 6) == (False, 0)  # far under: not asked
    assert measured(whole // 4, 1) == (True, 0)  # far over: not asked, compacts anyway


def test_a_failed_summary_sends_the_request_whole_when_it_fits(spans):
    history = stored_history()
    inner = answers()
    loop = make(SummariesFail(inner), options=small(size(history) // 2))
    step, _, recorder = run(loop, State(messages=list(history)))
    assert step == FinalOutput("end_turn")
    assert inner.requests[0].messages == tuple(history)
    assert purposes(recorder) == ["run"]
    (event,) = events_named(spans, telemetry.EVENT_SUMMARY_FAILED)
    assert event.attributes[telemetry.ATTR_REASON] == "provider_unavailable"


def test_a_failed_summary_fails_the_run_readably_when_the_request_does_not_fit():
    history = stored_history()
    full = size(history)
    inner = answers()
    loop = make(SummariesFail(inner), options=small(full // 2), window=full + 100)
    step, _, _ = run(loop, State(messages=list(history)))
    assert isinstance(step, Failed) and step.code == "context_overflow"
    assert "too long for the model" in step.message
    assert "summarizing it failed" in step.message and "overloaded" in step.message
    assert inner.requests == []  # nothing oversized or half-rewritten was sent


def test_capture_only_says_where_a_run_would_fail_and_shows_what_it_assembled():
    """The inspector's view of a request a run would refuse to send: the same verdict as the
    run's (tests above), reported instead of raised."""
    history = [Message.user("word " * 2_000, )]
    state = State(messages=list(history))
    sent = capture(make(ScriptedModel([]), options=small(500), window=1_500,
                        capture_only=True), state)
    assert sent.messages == tuple(history)
    failure = summarization.report(state).would_fail
    assert failure is not None and "no older messages can be summarized" in failure
    step, _, _ = run(make(answers(), options=small(500), window=1_500),
                     State(messages=list(history)))
    assert isinstance(step, Failed) and step.message == failure
    state = State(messages=list(history))
    capture(make(ScriptedModel([]), options=small(500), capture_only=True), state)
    assert summarization.report(state).would_fail is None  # it fits the window: sent whole


def test_with_nothing_older_to_summarize_the_request_goes_whole_or_the_run_fails():
    history = [Message.user("word " * 2_000, )]
    provider = answers()
    options = small(500)
    step, _, _ = run(make(provider, options=options), State(messages=list(history)))
    assert step == FinalOutput("end_turn") and provider.requests[0].messages == tuple(history)
    step, _, _ = run(make(answers(), options=options, window=1_500),
                     State(messages=list(history)))
    assert isinstance(step, Failed) and "no older messages can be summarized" in step.message


# -- telemetry, state and configuration ----------------------------------------------------------


def test_compaction_is_on_the_trace(spans):
    history = stored_history()
    run(make(answers(), options=small(size(history) // 2, keep_messages=4)),
        State(messages=list(history)))
    (event,) = events_named(spans, telemetry.EVENT_SUMMARIZED)
    assert event.attributes[telemetry.ATTR_SUMMARY_OUTCOME] == "created"
    assert event.attributes[telemetry.ATTR_SUMMARY_MESSAGES] == len(history) - 4
    (rewritten,) = events_named(spans, telemetry.EVENT_REQUEST_REWRITTEN)
    assert rewritten.attributes[telemetry.ATTR_MIDDLEWARE_NAME] == "summarization"
    chats = spans_named(spans, telemetry.SPAN_CHAT)
    assert [s.attributes.get(telemetry.ATTR_USAGE_PURPOSE) for s in chats] == ["summarize", None]


def test_its_report_lives_for_the_batch_only():
    history = stored_history()
    loop = make(answers(), options=small(size(history) // 2))
    _, state, _ = run(loop, State(messages=list(history)))
    assert reports(loop)[0].would_compact
    assert summarization.report(state) is None  # cleared with the batch's scratch
    assert "summarization" not in state_to_json(state)["private"]  # never in state_json


def stack_config(options=None, *, provider=True, capture_only=False) -> StackConfig:
    config = {} if options is None else {"summarization": options}
    deps = RunDeps(provider=ScriptedModel() if provider else None, model="m",
                   context_window=100_000)
    return StackConfig(agent=make_agent(config=config), deps=deps, capture_only=capture_only)


def test_from_config_defaults_and_switches():
    built = summarization.from_config(stack_config())
    assert isinstance(built, SummarizationMiddleware)
    assert (built.budget, built.keep) == (80_000, 6)
    assert summarization.from_config(stack_config({"trigger_tokens": 900})).budget == 900
    assert summarization.from_config(stack_config({"enabled": False})) is None
    assert summarization.from_config(stack_config(provider=False)) is None
    assert summarization.from_config(stack_config(provider=False, capture_only=True)) is not None
    names = [m.name for m in default_stack(stack_config())]
    assert names.index("summarization") < names.index("repair_tool_calls")
    assert Chain.build(default_stack(stack_config())).model_wrappers[0].name == "summarization"


@pytest.mark.parametrize("options", [
    {"trigger_tokens": 0}, {"trigger_fraction": 1.5}, {"keep_messages": "6"}, {"keep": 6},
    {"trigger_tokens": 100, "trigger_fraction": 0.5}, False, "on",
])
def test_bad_options_are_refused_when_the_stack_is_built(options):
    with pytest.raises(ConfigurationError, match="summarization"):
        summarization.from_config(stack_config(options))


def test_the_demo_script_carries_on_after_compaction():
    provider = Recording(named_script("demo"))
    task = "Count the words of this rather long request, " * 20
    loop = make(provider, options=small(400, keep_messages=2),
                tools=("write_todos", "word_count"))
    step, state, _ = run(loop, State(messages=[Message.user(task)]))
    assert step == FinalOutput("end_turn") and state.turn == 5
    assert provider.summary_requests and is_summary(provider.run_requests[-1].messages[0])
    # The user's words came through the summary: quoted, and counted by the tool.
    assert state.messages[-1].text.startswith(f'You said: "{task[:77]}...".')
    (count,) = [b for m in state.messages for b in m.tool_uses if b.name == "word_count"]
    assert count.input == {"text": task}
    ids = [b.id for m in state.messages for b in m.tool_uses]
    assert len(ids) == len(set(ids)) == 4
