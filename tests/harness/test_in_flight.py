"""A batch kept before any of its calls runs (harness.approvals.in_flight, the loop's
BatchGate): its checkpoint, how it finishes, what the inspector and a cancel make of it, and a
run hook that cannot let the run start."""

from __future__ import annotations

from dataclasses import dataclass, field

from harness import approvals, serde
from harness.approval_values import PendingCall, Result
from harness.chain import Chain
from harness.deps import StackConfig
from harness.errors import HarnessError
from harness.messages import ToolUseBlock
from harness.providers.scripted import ScriptedModel, text, tool_call
from harness.stack import default_stack
from harness.steps import Failed, FinalOutput, Interrupted, RunAgain
from tests.support.harness import CountingTool, make_agent, make_loop, run

CALLS = (ToolUseBlock(id="a", name="echo", input={"text": "x"}),
         ToolUseBlock(id="b", name="send", input={}))


def test_an_in_flight_batch_holds_no_call_and_needs_no_decision():
    batch = approvals.in_flight(CALLS, turn=4)
    assert batch.turn == 4 and batch.decided and batch.held == () and batch.done == {}
    assert [p.tool_use_id for p in batch.pending] == ["a", "b"]
    assert approvals.requested_event(batch) == ("approval.requested", {"pending": []})
    message, outlook = approvals.foresee(batch, CALLS)
    assert [o.outlook for o in outlook] == ["will_run", "will_run"]
    closing = approvals.close(CALLS, batch)
    assert [r.content for r in closing.tool_results] == [approvals.CANCELLED_BEFORE_RUN] * 2
    assert serde.batch_from_json(serde.batch_to_json(batch)) == batch


def test_a_held_call_keeps_why_it_waits_in_the_persisted_form():
    held = PendingCall(tool_use_id="b", name="send", input={}, allowed_decisions=("approve",),
                       reason="outcome_unknown")
    batch = approvals.pause({"a": Result(content="x")}, [held], turn=2)
    assert serde.batch_from_json(serde.batch_to_json(batch)) == batch
    old = serde.batch_to_json(batch)
    del old["turn"], old["pending"][0]["reason"]  # stored before they were kept
    assert serde.batch_from_json(old).turn == 0
    assert serde.batch_from_json(old).pending[0].reason == "approval"


@dataclass
class Gate:
    """A middleware that wants every batch calling ``tool`` kept before it runs."""

    tool: str
    name: str = "gate"
    closed: list[str] = field(default_factory=list)

    def checkpoints_before(self, calls) -> bool:
        return any(c.name == self.tool for c in calls)

    def close(self) -> None:
        self.closed.append("closed")


def gated_loop(model, counter, gate, agent=None):
    agent = agent or make_agent()
    stack = [gate, *default_stack(StackConfig(agent=agent))]
    loop = make_loop(model, agent=agent, middlewares=stack, tools=[counter.tool])
    assert isinstance(loop.chain, Chain)
    return loop


def test_a_gated_batch_is_committed_before_its_calls_run_then_finished_by_the_next_turn():
    counter, gate = CountingTool(name="send"), Gate("send")
    model = ScriptedModel([tool_call("send", {}, call_id="b"), text("done")])
    loop = gated_loop(model, counter, gate)
    step, state, recorder = run(loop)
    assert step == FinalOutput("end_turn")
    first, second, _ = recorder.results
    assert first.next == RunAgain() and [m.role for m in first.messages] == ["assistant"]
    assert counter.calls == [{}] and second.messages[0].tool_results[0].content == "counted"
    assert state.pending_batch is None and len(model.calls) == 2
    loop.close()
    assert gate.closed == ["closed"]


def test_a_gated_call_under_interrupt_on_still_waits_for_its_human():
    counter, gate = CountingTool(name="send"), Gate("send")
    agent = make_agent(config={"interrupt_on": {"send": ["approve"]}})
    model = ScriptedModel([tool_call("send", {}, call_id="b"), text("done")])
    step, state, recorder = run(gated_loop(model, counter, gate, agent))
    assert step == Interrupted("paused") and counter.calls == []
    assert [p.tool_use_id for p in state.pending_batch.held] == ["b"]
    assert state.pending_batch.turn == 1


class Refusing:
    name = "refusing"

    def before_run(self, state) -> None:
        state.emit("refused", {})
        raise HarnessError("no start")


def test_a_run_hook_that_refuses_ends_the_run_in_a_failed_turn_before_any_model_call():
    model = ScriptedModel([text("never")])
    agent = make_agent()
    loop = make_loop(model, agent=agent,
                     middlewares=[Refusing(), *default_stack(StackConfig(agent=agent))])
    step, _, recorder = run(loop)
    assert step == Failed("harness_error", "no start") and model.calls == []
    [result] = recorder.results
    assert result.turn == 1 and result.events == (("refused", {}),)
