"""harness.loop: turns, terminal steps, cancellation, tool errors, usage, checkpoints and spans."""

from __future__ import annotations

from dataclasses import replace

import pytest

from harness import telemetry
from harness.approvals import CANCELLED_BEFORE_RUN
from harness.deps import StackConfig
from harness.errors import ProviderAuthError, ProviderRateLimited
from harness.messages import Message, ModelUsage, Response, ToolUseBlock
from harness.providers.scripted import ScriptedModel, named_script, text, tool_call
from harness.stack import default_stack
from harness.state import State
from harness.steps import Failed, FinalOutput, Interrupted
from tests.support.harness import (
    STOPPED,
    TEXT_SCHEMA,
    CancelAfter,
    CountingTool,
    Recorder,
    events_named,
    make_agent,
    make_loop,
    run,
    spans_named,
)


def batch(*ids: str, name: str = "counter") -> Response:
    """One assistant message calling ``name`` once per id (a multi-call batch)."""
    uses = tuple(ToolUseBlock(id=i, name=name, input={}) for i in ids)
    return Response(message=Message(role="assistant", content=uses), stop_reason="tool_use")


def test_demo_script_runs_to_completion():
    step, state, recorder = run(make_loop(named_script("demo")),
                                State(messages=[Message.user("count these four words")]))
    assert step == FinalOutput("end_turn")
    assert state.turn == 5
    assert [r.turn for r in recorder.results] == [1, 2, 3, 4, 5]
    assert state.todos and all(t.status == "completed" for t in state.todos)
    assert "It has 4 words" in state.messages[-1].text
    # Each turn hands the checkpointer exactly the messages it added.
    added = [m for r in recorder.results for m in r.messages]
    assert added == state.messages[1:]


def test_usage_is_recorded_per_model_call_with_purpose_run():
    _, _, recorder = run(make_loop(named_script("demo")))
    for result in recorder.results:
        (usage,) = result.usage
        assert isinstance(usage, ModelUsage)
        assert (usage.purpose, usage.provider, usage.model) == ("run", "scripted", "script")
        assert usage.usage.input_tokens > 0 and usage.usage.output_tokens > 0


class ScratchProbe:
    """A tool wrapper that records the scratch it finds on entry, then writes to it."""

    name = "scratch_probe"

    def __init__(self) -> None:
        self.seen: list[tuple[str, dict]] = []

    def wrap_tool_call(self, req, next):
        self.seen.append((req.call.id, dict(req.state.scratch)))
        req.state.scratch[req.call.id] = True
        return next(req)


def test_per_batch_scratch_is_empty_at_the_start_of_each_batch():
    probe, counter = ScratchProbe(), CountingTool()
    model = ScriptedModel([batch("a1", "a2"), batch("b1"), batch("c1", "c2"), text("done")])
    step, state, _ = run(make_loop(model, middlewares=[probe], tools=[counter.tool]))
    assert probe.seen == [
        ("a1", {}), ("a2", {"a1": True}),
        ("b1", {}),
        ("c1", {}), ("c2", {"c1": True}),
    ]
    assert state.scratch == {}
    assert step == FinalOutput("end_turn")


def test_max_turns_stops_the_run():
    model = ScriptedModel([tool_call("echo", {"text": str(i)}) for i in range(5)])
    step, state, _ = run(make_loop(model, agent=make_agent(config={"max_turns": 2})))
    assert step == Failed("max_turns", "The run stopped after 2 turns, the agent's max_turns.")
    assert len(model.calls) == 2
    assert state.turn == 2


@pytest.mark.parametrize(("error", "code"), [
    (ProviderRateLimited("slow down"), "provider_rate_limited"),
    (ProviderAuthError("bad key"), "provider_auth"),
    (None, "script_exhausted"),
])
def test_a_provider_error_fails_the_run_with_its_code(error, code):
    model = ScriptedModel([error] if error else [])
    step, state, recorder = run(make_loop(model))
    assert isinstance(step, Failed)
    assert step.code == code
    assert state.turn == 0 and len(state.messages) == 1  # nothing half-written
    assert recorder.results[0].messages == ()


def test_cancel_before_a_tool_call_answers_the_rest_as_cancelled():
    counter = CountingTool()
    model = ScriptedModel([batch("x1", "x2", "x3"), text("never")])
    # Checks: the turn boundary, then before x1; the third check (before x2) cancels.
    control = CancelAfter(checks=2)
    step, state, recorder = run(make_loop(model, tools=[counter.tool]), control=control)
    assert step == Interrupted("cancelled")
    assert len(counter.calls) == 1
    results = state.messages[-1].tool_results
    assert [r.tool_use_id for r in results] == ["x1", "x2", "x3"]
    assert [r.is_error for r in results] == [False, True, True]
    assert results[1].content == results[2].content == CANCELLED_BEFORE_RUN
    assert len(model.calls) == 1
    assert recorder.results[-1].messages[-1] == state.messages[-1]  # the answers are kept


def test_cancel_at_the_turn_boundary_makes_no_model_call():
    model = ScriptedModel([text("never")])
    step, state, recorder = run(make_loop(model), control=CancelAfter(checks=0))
    assert step == Interrupted("cancelled")
    assert model.calls == []
    assert recorder.results[0].messages == () and state.turn == 0


def test_cancel_between_turns():
    model = ScriptedModel([tool_call("echo", {"text": "x"}), text("never")])
    step, state, _ = run(make_loop(model), control=CancelAfter(checks=2))
    assert step == Interrupted("cancelled")
    assert len(model.calls) == 1 and state.turn == 1


def test_an_unknown_tool_gets_an_error_listing_the_available_tools():
    model = ScriptedModel([tool_call("search_web", {"q": "x"}), text("sorry")])
    step, state, _ = run(make_loop(model))
    result = state.messages[2].tool_results[0]
    assert result.is_error
    assert result.content == (
        "There is no tool named 'search_web'. Available: echo, word_count, write_todos.")
    assert step == FinalOutput("end_turn")


@pytest.mark.parametrize(("args", "field"), [
    ({"text": 5}, "text: 5 is not of type 'string'"),
    ({}, "'text' is a required property"),
    ({"text": "x", "loud": True}, "'loud' was unexpected"),
])
def test_invalid_tool_arguments_are_an_error_the_model_can_read(args, field):
    shout = CountingTool(name="shout", schema=TEXT_SCHEMA)
    model = ScriptedModel([tool_call("shout", args), text("fixed")])
    run(make_loop(model, tools=[shout.tool]))
    result = model.calls[1].messages[-1].tool_results[0]
    assert result.is_error
    assert result.content.startswith("Invalid arguments for shout:")
    assert field in result.content
    assert shout.calls == []


def test_tool_result_events_reach_the_turn_result():
    model = ScriptedModel([tool_call("echo", {"text": "x"}, call_id="e1"), text("done")])
    _, _, recorder = run(make_loop(model))
    assert recorder.results[0].events == (
        ("tool.result", {"tool_use_id": "e1", "name": "echo", "is_error": False}),)


def test_a_checkpointer_returning_a_halt_stops_the_loop():
    model = ScriptedModel([tool_call("echo", {"text": "x"}), text("never")])
    step, state, recorder = run(make_loop(model), checkpointer=Recorder(keep_going=False))
    assert step == STOPPED
    assert len(model.calls) == 1 and len(recorder.results) == 1
    assert state.turn == 1


# -- spans -----------------------------------------------------------------------------------------

def test_invoke_agent_span_lists_the_exact_stack(spans):
    agent = make_agent()
    stack = default_stack(StackConfig(agent=agent))
    run(make_loop(ScriptedModel([text("hi")]), agent=agent, middlewares=stack))
    (invoke,) = spans_named(spans, telemetry.SPAN_INVOKE_AGENT)
    (event,) = [e for e in invoke.events if e.name == telemetry.EVENT_MIDDLEWARE_STACK]
    assert tuple(event.attributes[telemetry.ATTR_MIDDLEWARE_STACK]) == (
        "repair_tool_calls", "todo", "repeat_call", "human_in_the_loop", "tool_allowlist")
    assert invoke.attributes[telemetry.ATTR_GEN_AI_AGENT_ID] == agent.id
    assert invoke.attributes[telemetry.ATTR_STOP] == "FinalOutput"


def test_chat_and_execute_tool_spans(spans):
    model = ScriptedModel([tool_call("echo", {"text": "x"}, call_id="e1"), text("done")])
    run(make_loop(model))
    (invoke,) = spans_named(spans, telemetry.SPAN_INVOKE_AGENT)
    chats = spans_named(spans, telemetry.SPAN_CHAT)
    (tool_span,) = spans_named(spans, telemetry.SPAN_EXECUTE_TOOL)
    assert len(chats) == 2
    assert all(s.parent.span_id == invoke.context.span_id for s in [*chats, tool_span])
    assert [s.attributes[telemetry.ATTR_TURN] for s in chats] == [1, 2]
    assert chats[0].attributes[telemetry.ATTR_GEN_AI_RESPONSE_FINISH] == ("tool_use",)
    assert tool_span.attributes[telemetry.ATTR_GEN_AI_TOOL_NAME] == "echo"
    assert tool_span.attributes[telemetry.ATTR_GEN_AI_TOOL_CALL_ID] == "e1"
    assert tool_span.attributes[telemetry.ATTR_TOOL_IS_ERROR] is False


SECRET = "my-private-words-1234"


def run_with_content(trace_content: bool) -> None:
    model = ScriptedModel([tool_call("echo", {"text": SECRET}), text(f"answer {SECRET}")])
    state = State(messages=[Message.user(f"question {SECRET}")], trace_content=trace_content)
    run(make_loop(model), state)


def test_no_message_content_on_spans_by_default(spans):
    run_with_content(trace_content=False)
    finished = spans.get_finished_spans()
    assert finished
    for s in finished:
        values = [*s.attributes.values(), *(v for e in s.events for v in e.attributes.values())]
        assert not any(SECRET in str(v) for v in values), s.name
        assert telemetry.ATTR_GEN_AI_INPUT_MESSAGES not in s.attributes
        assert telemetry.ATTR_GEN_AI_OUTPUT_MESSAGES not in s.attributes


def test_message_content_is_on_the_chat_span_when_allowed(spans):
    run_with_content(trace_content=True)
    first, second = spans_named(spans, telemetry.SPAN_CHAT)
    assert f"question {SECRET}" in first.attributes[telemetry.ATTR_GEN_AI_INPUT_MESSAGES]
    assert SECRET in first.attributes[telemetry.ATTR_GEN_AI_OUTPUT_MESSAGES]
    assert f"answer {SECRET}" in second.attributes[telemetry.ATTR_GEN_AI_OUTPUT_MESSAGES]
    (tool_span,) = spans_named(spans, telemetry.SPAN_EXECUTE_TOOL)
    assert not any(SECRET in str(v) for v in tool_span.attributes.values())


def test_a_failed_run_still_records_its_stack_and_stop(spans):
    run(make_loop(ScriptedModel([])))
    (invoke,) = spans_named(spans, telemetry.SPAN_INVOKE_AGENT)
    assert invoke.attributes[telemetry.ATTR_STOP] == "Failed"
    assert len(events_named(spans, telemetry.EVENT_MIDDLEWARE_STACK)) == 1


def test_a_call_awaiting_approval_pauses_the_batch_and_resumes_in_call_order():
    from harness.approval_values import ApprovalDecision, AwaitingApproval
    from harness.chain import Chain
    from harness.loop import Loop
    from harness.messages import Message
    from harness.providers.scripted import ScriptedModel, text
    from harness.state import State, state_from_json, state_to_json
    from harness.steps import Interrupted, NeverCancel, RunAgain
    from harness.tools import builtin_registry

    class Gate:
        name = "gate"

        def wrap_tool_call(self, req, next):
            batch = req.state.pending_batch
            decision = batch.decisions.get(req.call.id) if batch else None
            if req.call.name != "word_count":
                return next(req)
            if decision is None:
                return AwaitingApproval(allowed_decisions=("approve", "reject"))
            return next(req)

    from harness.agent import AgentSpec
    from harness.messages import Response, ToolUseBlock

    calls = Response(message=Message(role="assistant", content=(
        ToolUseBlock(id="a", name="echo", input={"text": "hi"}),
        ToolUseBlock(id="b", name="word_count", input={"text": "one two"}),
        ToolUseBlock(id="c", name="echo", input={"text": "bye"}),
    )), stop_reason="tool_use")
    model = ScriptedModel([calls, text("done")])
    agent = AgentSpec(id="x", name="x", model="scripted:x")
    loop = Loop(agent=agent, chain=Chain.build([Gate()]), provider=model, model="x",
                tools=builtin_registry().all())
    state = State(messages=[Message.user("go")])
    paused = loop.turn(state, NeverCancel())
    assert paused.next == Interrupted("paused")
    assert [m.role for m in paused.messages] == ["assistant"]  # no results message yet
    assert [p.tool_use_id for p in state.pending_batch.pending] == ["b"]
    assert set(state.pending_batch.done) == {"a", "c"}
    assert ("approval.requested", {"pending": [{"tool_use_id": "b", "name": "word_count",
                                                "allowed_decisions": ["approve", "reject"],
                                                "reason": "approval"}]}) \
        in paused.events
    # Undecided: resuming pauses again without calling anything.
    assert loop.turn(state, NeverCancel()).next == Interrupted("paused")
    # Persisted, decided, resumed in a fresh state (as a worker would).
    resumed = state_from_json(state_to_json(state), messages=list(state.messages),
                              turn=state.turn)
    resumed.pending_batch = replace(resumed.pending_batch,
                                    decisions={"b": ApprovalDecision(type="approve")})
    finished = loop.turn(resumed, NeverCancel())
    assert finished.next == RunAgain() and resumed.pending_batch is None
    [results] = finished.messages
    assert [(b.tool_use_id, b.content) for b in results.content] == [
        ("a", "hi"), ("b", "2"), ("c", "bye")]
    assert len(model.calls) == 1  # the resumed batch made no model call


def test_a_cancel_mid_batch_answers_a_held_call_as_not_run():
    """The batch never paused: the held call did not run, and nothing waits for a human."""
    from harness.approval_values import AwaitingApproval

    class Hold:
        name = "hold"

        def wrap_tool_call(self, req, next):
            return AwaitingApproval(allowed_decisions=("approve",)) if req.call.id == "x1" \
                else next(req)

    counter = CountingTool()
    model = ScriptedModel([batch("x1", "x2"), text("never")])
    # Checks: the turn boundary, before x1 (held), then before x2: cancelled.
    step, state, _ = run(make_loop(model, middlewares=[Hold()], tools=[counter.tool]),
                         control=CancelAfter(checks=2))
    assert step == Interrupted("cancelled") and state.pending_batch is None
    assert [(r.tool_use_id, r.content, r.is_error) for r in state.messages[-1].tool_results] == [
        ("x1", CANCELLED_BEFORE_RUN, True), ("x2", CANCELLED_BEFORE_RUN, True)]
    assert counter.calls == []
