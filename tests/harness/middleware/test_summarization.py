"""SummarizationMiddleware: compacting the outgoing request, reusing its summary, failing well."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import pytest

from harness import estimator, telemetry
from harness.chain import Chain
from harness.errors import ConfigurationError, ProviderUnavailable
from harness.history import is_summary, validate
from harness.loop import Failed, FinalOutput
from harness.messages import (
    Message,
    Request,
    Response,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from harness.middleware import summarization
from harness.middleware.summarization import SummarizationMiddleware, SummarizationReport
from harness.providers.base import Provider
from harness.providers.scripted import ConversationScript, ScriptedModel, named_script, text
from harness.stack import RunDeps, StackConfig, default_stack
from harness.state import State, state_to_json
from harness.stores import Summary
from tests.harness.helpers import events_named, make_agent, make_loop, run, spans_named

TASK = "Please echo every step of the plan."


@dataclass
class MemorySummaries:
    """A SummaryStore in memory; like the database one, it only moves forward."""

    summary: Summary | None = None
    saved: list[Summary] = field(default_factory=list)

    def load(self) -> Summary | None:
        return self.summary

    def save(self, summary: Summary) -> None:
        self.saved.append(summary)
        if self.summary is None or summary.through_seq >= self.summary.through_seq:
            self.summary = summary


@dataclass
class Recording:
    """The run's provider, keeping every request it receives (summaries included)."""

    inner: Provider
    name: str = "scripted"
    requests: list[Request] = field(default_factory=list)

    def complete(self, request: Request) -> Response:
        self.requests.append(request)
        return self.inner.complete(request)

    @property
    def run_requests(self) -> list[Request]:
        return [r for r in self.requests if r.metadata.get("purpose") != "summarize"]

    @property
    def summary_requests(self) -> list[Request]:
        return [r for r in self.requests if r.metadata.get("purpose") == "summarize"]


class SummariesFail:
    """Answers the run's calls, refuses every summarizer call."""

    name = "scripted"

    def __init__(self, inner: Provider) -> None:
        self.inner = inner

    def complete(self, request: Request) -> Response:
        if request.metadata.get("purpose") == "summarize":
            raise ProviderUnavailable("the summarizer is overloaded", provider="scripted")
        return self.inner.complete(request)


def answers(content: str = "Done.") -> Recording:
    return Recording(ConversationScript(script=lambda request: text(content), model="script"))


def stored_history(steps: int = 10, *, question: str = "And now?") -> list[Message]:
    """A stored session (seqs 1..N): a task, ``steps`` echo calls with their results, an answer,
    then a new user question."""
    messages = [Message.user(TASK)]
    for i in range(steps):
        payload = f"payload {i} " * 6
        messages.append(Message(role="assistant", content=(
            TextBlock(text=f"Step {i}: echoing."),
            ToolUseBlock(id=f"h{i}", name="echo", input={"text": payload}))))
        messages.append(Message(role="user", content=(
            ToolResultBlock(tool_use_id=f"h{i}", content=payload),)))
    messages += [Message(role="assistant", content=(TextBlock(text="All echoed."),)),
                 Message.user(question)]
    return [replace(m, seq=i + 1) for i, m in enumerate(messages)]


def small(budget: int, **more) -> dict:
    """Options for a small budget: the room kept for the summary fits it too."""
    return {"trigger_tokens": budget, "summary_max_tokens": 64, **more}


def make(provider: Provider, *, options: dict | None = None, store=None, window: int = 32_000,
         capture_only: bool = False, max_turns: int = 50, tools=("echo",)):
    config = {"max_turns": max_turns}
    if options is not None:
        config["summarization"] = options
    agent = make_agent(config=config, max_tokens=256, allowed_tools=tools)
    deps = RunDeps(provider=provider, model="script", summaries=store, context_window=window)
    stack = default_stack(StackConfig(agent=agent, deps=deps, capture_only=capture_only))
    return make_loop(provider, agent=agent, middlewares=[*stack, Reports()])


class Reports:
    """Innermost: keeps the summarization report of every model call (scratch is per batch)."""

    name = "reports"

    def __init__(self) -> None:
        self.seen: list[SummarizationReport | None] = []

    def wrap_model_call(self, req, next):
        self.seen.append(summarization.report(req.state))
        return next(req)


def size(history: list[Message]) -> int:
    """The estimated size of the first request a run over ``history`` sends."""
    loop = make(answers(), options={"enabled": False})
    return estimator.estimate_request(loop.prepare(State(messages=history)).to_provider_request())


def purposes(recorder) -> list[str]:
    return [u.purpose for result in recorder.results for u in result.usage]


def reports(loop) -> list[SummarizationReport | None]:
    (probe,) = [m for m in loop.chain.middlewares if isinstance(m, Reports)]
    return probe.seen


# -- triggering and the compacted request ------------------------------------------------------


def test_under_the_budget_nothing_changes():
    history = stored_history()
    provider = answers()
    loop = make(provider, options=small(size(history) + 1))
    _, state, recorder = run(loop, State(messages=list(history)))
    (sent,) = provider.requests
    assert sent.messages == tuple(history)
    assert purposes(recorder) == ["run"]
    (report,) = reports(loop)
    assert report.would_compact is False and report.summarized == 0


def test_over_trigger_tokens_older_messages_become_one_summary_and_the_last_are_kept():
    history = stored_history()
    budget = size(history) // 2
    provider, store = answers(), MemorySummaries()
    loop = make(provider, options=small(budget, keep_messages=4), store=store)
    step, state, recorder = run(loop, State(messages=list(history)))
    assert step == FinalOutput("end_turn")
    (sent,) = provider.run_requests
    summary, *kept = sent.messages
    assert is_summary(summary) and summary.role == "user" and summary.seq is None
    assert summary.text.startswith("Summary of the earlier conversation: The user said:")
    assert kept == history[-4:]  # the last call, its result, the answer, the question
    assert validate(sent.messages) == []
    assert estimator.estimate_request(sent) <= budget
    # The summary was made by a model call recorded with purpose "summarize", then stored.
    assert purposes(recorder) == ["summarize", "run"]
    assert store.saved == [Summary(text=summary.text.split(": ", 1)[1],
                                   through_seq=history[-5].seq)]
    # The working (stored) history is untouched; the summary lived in the request only.
    assert state.messages[:len(history)] == history
    (st,) = reports(loop)
    assert st.would_compact and st.summarized == len(history) - 4
    assert (st.summary_from_seq, st.summary_through_seq) == (1, history[-5].seq)
    assert st.tokens > budget >= st.tokens_after


def test_a_cut_between_a_call_and_its_results_keeps_them_together():
    history = stored_history()[:-2]  # ends with the last call's results
    provider = answers()
    run(make(provider, options=small(size(history) // 2, keep_messages=1)),
        State(messages=list(history)))
    (sent,) = provider.run_requests
    assert sent.messages[1:] == tuple(history[-2:])  # the call came along with its results
    assert validate(sent.messages) == []


def test_trigger_fraction_is_a_share_of_the_context_window():
    history = stored_history()
    full = size(history)
    for fraction, window, compacts in [(0.5, full + 400, True), (0.5, 2 * full + 2, False)]:
        provider = answers()
        run(make(provider, options={"trigger_fraction": fraction, "summary_max_tokens": 64},
                 window=window),
            State(messages=list(history)))
        assert is_summary(provider.run_requests[0].messages[0]) is compacts, (fraction, window)


def test_by_default_it_is_on_at_eight_tenths_of_the_window_keeping_six_messages():
    history = stored_history(60)
    full = size(history)
    provider = answers()
    run(make(provider, window=int(full / 0.8) - 20), State(messages=list(history)))
    assert is_summary(provider.run_requests[0].messages[0])
    assert provider.run_requests[0].messages[1:] == tuple(history[-6:])
    provider = answers()
    run(make(provider, window=int(full / 0.8) + 20), State(messages=list(history)))
    assert provider.run_requests[0].messages == tuple(history)


# -- reuse across runs ---------------------------------------------------------------------------


def test_the_next_run_extends_the_stored_summary_with_only_the_newer_messages():
    store = MemorySummaries()
    first = stored_history(10)
    budget = size(first) // 2
    options = small(budget, keep_messages=4)
    run(make(answers(), options=options, store=store), State(messages=list(first)))
    (stored,) = store.saved
    # The next run: the first run's answer was stored, then four more steps and a question.
    later = stored_history(14, question="One more thing?")
    provider = answers()
    _, state, recorder = run(make(provider, options=options, store=store),
                             State(messages=list(later)))
    (request,) = provider.summary_requests
    prompt = request.messages[0].text
    assert prompt.startswith(f"The summary so far:\n\n{stored.text}\n\nWhat happened after it:")
    transcript = prompt.split("What happened after it:", 1)[1]
    assert "payload 0 " not in transcript and "payload 3 " not in transcript  # summarized before
    assert "payload 9 " in transcript and "payload 11 " in transcript
    assert store.summary.through_seq == later[-5].seq > stored.through_seq
    assert purposes(recorder) == ["summarize", "run"]
    assert provider.run_requests[0].messages[1:] == tuple(later[-4:])


def test_a_cut_at_the_same_point_reuses_the_stored_summary_without_a_model_call():
    store = MemorySummaries()
    history = stored_history()
    options = small(size(history) // 2, keep_messages=4)
    run(make(answers(), options=options, store=store), State(messages=list(history)))
    provider = answers()
    _, _, recorder = run(make(provider, options=options, store=store),
                         State(messages=list(history)))
    assert provider.summary_requests == [] and purposes(recorder) == ["run"]
    assert provider.run_requests[0].messages[0].text.endswith(store.summary.text)
    assert len(store.saved) == 1


def test_within_a_run_the_summary_is_extended_turn_after_turn_and_requests_stay_in_budget():
    """A 300-turn run with a small budget: every request the model receives fits it."""
    provider = Recording(named_script("workload-300"))
    budget = 3_000
    loop = make(provider, options=small(budget, keep_messages=6), max_turns=400,
                tools=("echo", "write_todos"))
    step, state, _ = run(loop)
    assert step == FinalOutput("end_turn")
    assert state.messages[-1].text == "All 300 steps done."
    assert len(provider.run_requests) == 301
    sizes = [estimator.estimate_request(r) for r in provider.run_requests]
    assert max(sizes) <= budget
    assert all(validate(r.messages) == [] for r in provider.run_requests)
    first, *later = provider.summary_requests
    assert len(later) >= 10
    # Each later summary extends the previous one with the newly dropped messages only.
    for request in later:
        prompt = request.messages[0].text
        assert prompt.startswith("The summary so far:") and "step 0:" not in prompt
        assert estimator.estimate_request(request) < budget


def test_every_message_is_estimated_once_over_a_long_run(monkeypatch):
    computed: list[int] = []
    original = estimator._message_tokens
    monkeypatch.setattr(estimator, "_message_tokens",
                        lambda m: computed.append(id(m)) or original(m))
    provider = Recording(named_script("workload-60"))
    run(make(provider, options=small(1_500), tools=("echo", "write_todos")))
    sent = {id(m) for r in provider.run_requests for m in r.messages}
    assert len(computed) == len(set(computed))  # never the same message twice
    assert set(computed) <= sent  # and only what was (or was about to be) sent


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


def test_capture_only_reports_would_compact_and_calls_nothing():
    history = stored_history()
    model = ScriptedModel([])  # any call raises ScriptExhausted
    store = MemorySummaries(Summary(text="old", through_seq=5))
    loop = make(model, options=small(size(history) // 2), store=store,
                capture_only=True)
    state = State(messages=list(history))
    request = capture(loop, state)
    assert model.calls == [] and store.saved == []
    assert request.messages == tuple(history)  # shown as they are now
    assert summarization.report(state).would_compact is True
    state = State(messages=list(history[:3]))
    capture(loop, state)
    assert summarization.report(state).would_compact is False


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
