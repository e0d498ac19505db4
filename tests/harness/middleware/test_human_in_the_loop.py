"""HumanInTheLoopMiddleware: a configured call pauses the batch; each decision type resumes it
(approve runs, edit runs with new arguments, reject and respond never run the tool), in call
order, across a checkpoint round trip. Telemetry names the tool and decision, never content."""

from __future__ import annotations

from dataclasses import replace

import pytest
from pydantic import ValidationError

from harness import approvals, telemetry
from harness.agent import AgentConfig
from harness.approval_values import ApprovalDecision, PendingBatch, PendingCall, Result
from harness.approvals import CANCELLED_BEFORE_DECISION, REJECTED
from harness.chain import ToolCallRequest
from harness.deps import StackConfig
from harness.loop import Loop
from harness.messages import Message, Response, ToolUseBlock
from harness.middleware.human_in_the_loop import HumanInTheLoopMiddleware, from_config
from harness.providers.scripted import ScriptedModel, text, tool_call
from harness.stack import default_stack
from harness.state import State, state_from_json, state_to_json
from harness.steps import Interrupted, RunAgain
from harness.tools import builtin_registry
from harness.tools.base import ToolResult
from tests.support.harness import CountingTool, events_named, make_agent, make_loop, run

SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}},
          "required": ["path"], "additionalProperties": False}
ALL = ["approve", "edit", "reject", "respond"]
SECRET = "s3cret-payload"


def agent_loop(*steps: Response, interrupt_on=None):
    """A loop over the default stack with a ``delete`` tool needing approval, plus echo."""
    delete = CountingTool(name="delete", schema=SCHEMA, answer="deleted")
    agent = make_agent(config={"interrupt_on": interrupt_on or {"delete": ALL}})
    model = ScriptedModel([*steps, text("done")])
    loop = make_loop(model, agent=agent, middlewares=default_stack(StackConfig(agent=agent)),
                     tools=[delete.tool, *builtin_registry().all()])
    return loop, model, delete


def pause(loop: Loop) -> State:
    state = State(messages=[Message.user("clean up")])
    step, state, recorder = run(loop, state)
    assert step == Interrupted("paused")
    assert [m.role for m in recorder.results[-1].messages] == ["assistant"]
    return state


def resume(loop: Loop, state: State, **decisions: ApprovalDecision):
    """As a worker would: the state from its checkpoint, the API's decisions written into it,
    then the whole run (``before_run`` hooks included). Returns the state and the first turn."""
    restored = state_from_json(state_to_json(state), messages=list(state.messages),
                               turn=state.turn)
    assert restored.pending_batch is not None
    restored.pending_batch = replace(restored.pending_batch,
                                     decisions={**restored.pending_batch.decisions, **decisions})
    _, _, recorder = run(loop, restored)
    return restored, recorder.results[0]


def only_result(result):
    [message] = result.messages
    [block] = message.content
    return block


def test_a_configured_call_pauses_without_running(spans):
    loop, model, delete = agent_loop(tool_call("delete", {"path": f"/{SECRET}"}, call_id="d1"))
    state = pause(loop)
    assert delete.calls == []
    [pending] = state.pending_batch.pending
    assert (pending.tool_use_id, pending.name, pending.input, pending.allowed_decisions) == (
        "d1", "delete", {"path": f"/{SECRET}"}, tuple(ALL))
    (event,) = events_named(spans, telemetry.EVENT_APPROVAL_REQUESTED)
    assert event.attributes[telemetry.ATTR_GEN_AI_TOOL_NAME] == "delete"
    assert not any(SECRET in str(v) for v in event.attributes.values())
    # Undecided, the batch stays paused and the model is not called again.
    assert run(loop, state)[0] == Interrupted("paused")
    assert len(model.calls) == 1


def test_approve_runs_the_call_as_made(spans):
    loop, model, delete = agent_loop(tool_call("delete", {"path": "/tmp/a"}, call_id="d1"))
    state, result = resume(loop, pause(loop), d1=ApprovalDecision(type="approve"))
    assert delete.calls == [{"path": "/tmp/a"}]
    block = only_result(result)
    assert (block.tool_use_id, block.content, block.is_error) == ("d1", "deleted", False)
    assert result.next == RunAgain() and state.pending_batch is None
    assert result.usage == ()  # finishing the batch made no model call
    # The model's next request holds the call and its one result, nothing repaired.
    assert model.calls[-1].messages[-1].tool_results == (block,)
    assert len(model.calls[-1].messages) == 3
    (event,) = events_named(spans, telemetry.EVENT_APPROVAL_APPLIED)
    assert event.attributes[telemetry.ATTR_APPROVAL_DECISION] == "approve"
    assert event.attributes[telemetry.ATTR_GEN_AI_TOOL_NAME] == "delete"


def test_edit_runs_the_call_with_the_new_arguments():
    loop, _, delete = agent_loop(tool_call("delete", {"path": "/"}, call_id="d1"))
    _, result = resume(loop, pause(loop),
                       d1=ApprovalDecision(type="edit", input={"path": "/tmp/only-this"}))
    assert delete.calls == [{"path": "/tmp/only-this"}]
    assert only_result(result).content == "deleted"


def test_an_invalid_edit_becomes_an_error_result_the_model_reads():
    loop, model, delete = agent_loop(tool_call("delete", {"path": "/"}, call_id="d1"))
    state, result = resume(loop, pause(loop),
                           d1=ApprovalDecision(type="edit", input={"path": 7, "extra": True}))
    assert delete.calls == []
    block = only_result(result)
    assert block.is_error and block.content.startswith("Invalid arguments for delete")
    # The run goes on: the model reads the error on its next turn.
    assert state.messages[-1].text == "done"
    assert model.calls[-1].messages[-1].tool_results == (block,)


def test_reject_answers_with_the_humans_reason_and_never_runs_the_tool(spans):
    loop, _, delete = agent_loop(tool_call("delete", {"path": "/"}, call_id="d1"))
    _, result = resume(loop, pause(loop),
                       d1=ApprovalDecision(type="reject", message=f"never the root {SECRET}"))
    assert delete.calls == []
    block = only_result(result)
    assert block.is_error and block.content == f"{REJECTED} Reason: never the root {SECRET}"
    (event,) = events_named(spans, telemetry.EVENT_APPROVAL_APPLIED)
    assert event.attributes[telemetry.ATTR_APPROVAL_DECISION] == "reject"
    assert not any(SECRET in str(v) for v in event.attributes.values())


def test_reject_without_a_message_still_says_it_was_rejected():
    loop, _, _ = agent_loop(tool_call("delete", {"path": "/"}, call_id="d1"))
    _, result = resume(loop, pause(loop), d1=ApprovalDecision(type="reject"))
    block = only_result(result)
    assert block.is_error and block.content == REJECTED


def test_respond_makes_the_humans_text_the_result_and_never_runs_the_tool():
    loop, _, delete = agent_loop(tool_call("delete", {"path": "/"}, call_id="d1"))
    _, result = resume(loop, pause(loop),
                       d1=ApprovalDecision(type="respond", message="Already done by hand."))
    assert delete.calls == []
    block = only_result(result)
    assert (block.content, block.is_error) == ("Already done by hand.", False)


def test_a_mixed_batch_keeps_call_order_and_runs_the_free_calls_once():
    batch = Response(message=Message(role="assistant", content=(
        ToolUseBlock(id="a", name="echo", input={"text": "first"}),
        ToolUseBlock(id="b", name="delete", input={"path": "/x"}),
        ToolUseBlock(id="c", name="echo", input={"text": "third"}),
        ToolUseBlock(id="d", name="delete", input={"path": "/y"}),
    )), stop_reason="tool_use")
    loop, _, delete = agent_loop(batch)
    state = pause(loop)
    assert [p.tool_use_id for p in state.pending_batch.pending] == ["b", "d"]
    assert state.pending_batch.done == {"a": Result(content="first"),
                                       "c": Result(content="third")}
    # One decision is not enough: the batch stays paused.
    _, still = resume(loop, state, b=ApprovalDecision(type="approve"))
    assert still.next == Interrupted("paused") and delete.calls == []
    _, result = resume(loop, state, b=ApprovalDecision(type="approve"),
                       d=ApprovalDecision(type="respond", message="skip it"))
    [message] = result.messages
    assert [(b.tool_use_id, b.content, b.is_error) for b in message.content] == [
        ("a", "first", False), ("b", "deleted", False), ("c", "third", False),
        ("d", "skip it", False)]
    assert delete.calls == [{"path": "/x"}]


def test_a_recorded_decision_wins_over_the_current_config():
    # The agent stopped requiring approval for the tool after the pause: the recorded reject
    # still holds, and the tool never runs.
    middleware = HumanInTheLoopMiddleware(interrupt_on={"echo": ("approve",)})
    call = ToolUseBlock(id="d1", name="delete", input={"path": "/"})
    batch = PendingBatch(
        pending=[PendingCall(tool_use_id="d1", name="delete", input={"path": "/"},
                             allowed_decisions=("reject",))],
        decisions={"d1": ApprovalDecision(type="reject", message="no")})
    ran = []
    req = ToolCallRequest(call=call, state=State(pending_batch=batch),
                          tool=CountingTool(name="delete", schema=SCHEMA).tool)
    result = middleware.wrap_tool_call(req, lambda r: ran.append(r) or ToolResult(content="x"))
    assert ran == [] and result.is_error and "no" in result.content


def test_an_unknown_tool_is_not_held_for_approval():
    loop, _, _ = agent_loop(tool_call("nope", {}, call_id="n1"), interrupt_on={"nope": ["approve"]})
    _, _, recorder = run(loop, State(messages=[Message.user("go")]))
    result = recorder.results[0]
    assert result.next == RunAgain()
    assistant, results = result.messages
    assert "There is no tool named 'nope'" in results.content[0].content


def test_closing_a_cancelled_batch_answers_every_call_in_order():
    calls = (ToolUseBlock(id="a", name="echo", input={}),
             ToolUseBlock(id="b", name="delete", input={}),
             ToolUseBlock(id="c", name="delete", input={}))
    batch = PendingBatch(
        done={"a": Result(content="ran")},
        pending=[PendingCall(tool_use_id=i, name="delete", input={}, allowed_decisions=("approve",))
                 for i in ("b", "c")],
        decisions={"c": ApprovalDecision(type="approve")})
    message = approvals.close(calls, batch)
    assert message.role == "user"
    assert [(b.tool_use_id, b.is_error) for b in message.content] == [
        ("a", False), ("b", True), ("c", True)]
    assert message.content[1].content == CANCELLED_BEFORE_DECISION
    assert "cancelled before this tool call ran" in message.content[2].content


def test_from_config_always_builds_the_middleware():
    # Present without interrupt_on too: decisions recorded before an edit still apply.
    assert from_config(StackConfig(agent=make_agent())).interrupt_on == {}
    assert from_config(StackConfig(agent=make_agent(config={"interrupt_on": {}}))).interrupt_on \
        == {}
    built = from_config(StackConfig(agent=make_agent(config={"interrupt_on": {"x": ["edit"]}})))
    assert isinstance(built, HumanInTheLoopMiddleware) and built.interrupt_on == {"x": ("edit",)}
    names = [m.name for m in default_stack(StackConfig(
        agent=make_agent(config={"interrupt_on": {"x": ["edit"]}})))]
    assert names.index("human_in_the_loop") == names.index("tool_allowlist") - 1


@pytest.mark.parametrize("bad", [
    None, "delete", {"delete": []}, {"delete": "approve"}, {"delete": ["maybe"]},
    {"": ["edit"]},
])
def test_bad_configuration_is_refused_by_the_config_the_middleware_is_built_from(bad):
    # Validated once, as the agent's config (the API answers 422); the middleware takes it.
    with pytest.raises(ValidationError):
        AgentConfig.model_validate({"interrupt_on": bad})


def test_a_resumed_call_is_counted_once_by_the_repeat_guard():
    # The call passes the (outer) repeat guard when it pauses and again when it resumes; it
    # was made once, so a second identical call later is its second, not its third.
    loop, _, delete = agent_loop(tool_call("delete", {"path": "/a"}, call_id="d1"),
                                 tool_call("delete", {"path": "/a"}, call_id="d2"))
    state, _ = resume(loop, pause(loop), d1=ApprovalDecision(type="approve"))
    state, _ = resume(loop, state, d2=ApprovalDecision(type="approve"))
    assert delete.calls == [{"path": "/a"}, {"path": "/a"}]
