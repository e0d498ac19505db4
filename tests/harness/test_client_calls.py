"""harness.client_calls: a client tool's call parks its batch as a held call of the approvals
machinery, the caller's results are recorded (some or all, each once), an expiry answers the
rest as failed, and the resumed batch answers every call in call order."""

from __future__ import annotations

import pytest

from harness import approvals, client_calls, serde
from harness.approval_values import PendingBatch, PendingCall, Result
from harness.client_calls import ClientResult, RejectedResults
from harness.messages import ImageBlock, Message, Response, ToolResultBlock, ToolUseBlock
from harness.providers.scripted import ScriptedModel, text
from harness.state import State
from harness.steps import Interrupted, NeverCancel, RunAgain
from tests.support.harness import make_agent, make_loop

LOOKUP = {"name": "lookup_order", "description": "Find an order by its number.",
          "input_schema": {"type": "object", "properties": {"order": {"type": "integer"}},
                           "required": ["order"]}}
PIXEL = ImageBlock(media_type="image/png", data="iVBORw0KGgo=")


def client(i: str) -> PendingCall:
    return PendingCall(tool_use_id=i, name="lookup_order", input={"order": 1},
                       allowed_decisions=(), reason="client")


def mixed() -> PendingBatch:
    """A batch that ran ``a``, holds ``b`` for approval and ``c``, ``d`` for the caller."""
    held = PendingCall(tool_use_id="b", name="delete", input={}, allowed_decisions=("approve",))
    return approvals.pause({"a": Result(content="x")}, [held, client("c"), client("d")])


def test_a_client_call_is_held_and_waits_for_the_caller_not_a_human():
    batch = mixed()
    assert [p.tool_use_id for p in batch.held] == ["b", "c", "d"]
    assert [p.tool_use_id for p in batch.approval_held] == ["b"]
    assert [p.tool_use_id for p in client_calls.waiting(batch)] == ["c", "d"]
    assert batch.awaiting_approval and not batch.decided
    # The approval event lists the human's call only; the caller's event the client calls.
    assert [p["tool_use_id"] for p in approvals.requested_event(batch)[1]["pending"]] == ["b"]
    assert client_calls.requested_event(batch, None) == ("tool_results.requested", {
        "tool_calls": [{"tool_use_id": "c", "name": "lookup_order"},
                       {"tool_use_id": "d", "name": "lookup_order"}], "expires_at": None})


def test_results_and_decisions_are_recorded_in_either_order_until_every_call_is_answered():
    batch = client_calls.submit(mixed(), [ClientResult(tool_use_id="c", content="42")])
    assert [p.tool_use_id for p in batch.awaiting_results] == ["d"]
    assert client_calls.submitted_event(["c"], batch) == (
        "tool_results.submitted", {"tool_use_ids": ["c"], "remaining": 1})
    batch = approvals.decide(batch, [{"tool_use_id": "b", "type": "approve"}])
    assert not batch.awaiting_approval and not batch.decided  # "d" still waits
    batch = client_calls.submit(batch, [ClientResult(tool_use_id="d", content="no such order",
                                                     is_error=True, images=(PIXEL,))])
    assert batch.decided and set(batch.decisions) == {"b", "c", "d"}
    # The approval event names the human's decision only.
    assert approvals.decided_event(batch)[1]["decisions"] == [
        {"tool_use_id": "b", "name": "delete", "type": "approve"}]
    assert approvals.resolve(batch.decisions["d"]) == approvals.Answer(
        content="no such order", is_error=True, images=(PIXEL,))
    # Kept in the checkpoint and read back the same.
    assert serde.batch_from_json(serde.batch_to_json(batch)) == batch


@pytest.mark.parametrize(("results", "detail"), [
    ([ClientResult(tool_use_id="zz", content="")], {"unknown": ["zz"]}),
    ([ClientResult(tool_use_id="b", content="")], {"not_client_calls": ["b"]}),
    ([ClientResult(tool_use_id="a", content="")], {"not_client_calls": ["a"]}),
    ([ClientResult(tool_use_id="c", content=""), ClientResult(tool_use_id="c", content="")],
     {"repeated": ["c"]}),
])
def test_a_result_for_anything_but_a_waiting_client_call_refuses_the_whole_submission(
        results, detail):
    batch = mixed()
    with pytest.raises(RejectedResults) as raised:
        client_calls.submit(batch, results)
    assert raised.value.detail == detail


def test_a_call_answered_once_is_not_answered_again():
    batch = client_calls.submit(mixed(), [ClientResult(tool_use_id="c", content="first")])
    with pytest.raises(RejectedResults) as raised:
        client_calls.submit(batch, [ClientResult(tool_use_id="c", content="second"),
                                    ClientResult(tool_use_id="d", content="d")])
    assert raised.value.detail == {"already_answered": ["c"]}
    assert batch.decisions["c"].message == "first" and "d" not in batch.decisions


def test_expiry_answers_only_the_calls_still_waiting_as_failed():
    batch = client_calls.submit(mixed(), [ClientResult(tool_use_id="c", content="42")])
    expired, late = client_calls.expire(batch)
    assert late == ["d"] and expired.decisions["c"].message == "42"
    assert approvals.resolve(expired.decisions["d"]) == approvals.Answer(
        content="no result from the caller", is_error=True)
    assert expired.awaiting_approval  # the human's decision is not the expiry's to make


def test_a_cancel_keeps_the_callers_answers_and_says_which_calls_got_none():
    batch = client_calls.submit(mixed(), [ClientResult(tool_use_id="c", content="42")])
    calls = [ToolUseBlock(id=i, name="x", input={}) for i in "abcd"]
    closing = approvals.close(calls, batch)
    assert [(b.content, b.is_error) for b in closing.content] == [
        ("x", False), (approvals.CANCELLED_BEFORE_DECISION, True), ("42", False),
        (approvals.CANCELLED_BEFORE_RESULT, True)]


def test_the_inspector_foresees_a_client_call_answered_or_awaiting_its_result():
    batch = client_calls.submit(mixed(), [ClientResult(tool_use_id="c", content="42")])
    calls = [ToolUseBlock(id=i, name="x", input={}) for i in "abcd"]
    message, seen = approvals.foresee(batch, calls)
    assert [c.outlook for c in seen] == ["ran", "awaiting_decision", "answered",
                                         "awaiting_result"]
    assert [b.content for b in message.content] == ["x", "", "42", ""]


def _loop_with_client_tool(model: ScriptedModel, **config):
    agent = make_agent(config={"client_tools": [LOOKUP], **config})
    return make_loop(model, agent=agent)


def test_the_model_is_offered_a_client_tool_and_its_call_parks_the_batch_until_answered():
    calls = Response(message=Message(role="assistant", content=(
        ToolUseBlock(id="a", name="echo", input={"text": "hi"}),
        ToolUseBlock(id="b", name="lookup_order", input={"order": 42}),
        ToolUseBlock(id="c", name="word_count", input={"text": "one two"}),
        ToolUseBlock(id="d", name="echo", input={"text": "held"}),
    )), stop_reason="tool_use")
    model = ScriptedModel([calls, text("Order 42 ships today.")])
    loop = _loop_with_client_tool(model, interrupt_on={"echo": ["approve"]})
    state = State(messages=[Message.user("Where is order 42?")])
    paused = loop.turn(state, NeverCancel())
    offered = {t.name: t for t in model.calls[0].tools}
    assert offered["lookup_order"].input_schema == LOOKUP["input_schema"]
    assert offered["lookup_order"].description == LOOKUP["description"]
    assert paused.next == Interrupted("paused")
    batch = state.pending_batch
    assert [(p.tool_use_id, p.reason) for p in batch.held] == [
        ("a", "approval"), ("b", "client"), ("d", "approval")]
    assert set(batch.done) == {"c"}  # the built-in tool ran
    assert not [e for e in paused.events if e[0] == "tool_results.requested"]  # the server's
    # Answered and decided, the batch finishes in call order and the model reads the result.
    batch = client_calls.submit(batch, [ClientResult(tool_use_id="b", content="ships today")])
    state.pending_batch = approvals.decide(batch, [{"tool_use_id": "a", "type": "approve"},
                                                   {"tool_use_id": "d", "type": "approve"}])
    finished = loop.turn(state, NeverCancel())
    assert finished.next == RunAgain() and state.pending_batch is None
    [results] = finished.messages
    assert [(b.tool_use_id, b.content) for b in results.content] == [
        ("a", "hi"), ("b", "ships today"), ("c", "2"), ("d", "held")]
    loop.turn(state, NeverCancel())
    assert isinstance(model.calls[1].messages[-1].content[1], ToolResultBlock)


def test_a_client_call_with_bad_arguments_is_answered_at_once_never_parked():
    bad = Response(message=Message(role="assistant", content=(
        ToolUseBlock(id="b", name="lookup_order", input={"order": "forty-two"}),)),
        stop_reason="tool_use")
    model = ScriptedModel([bad, text("sorry")])
    loop = _loop_with_client_tool(model)
    state = State(messages=[Message.user("go")])
    step = loop.turn(state, NeverCancel())
    assert step.next == RunAgain() and state.pending_batch is None
    [result] = step.messages[-1].content
    assert result.is_error and "Invalid arguments for lookup_order" in result.content


def test_a_client_tool_outside_allowed_tools_is_neither_offered_nor_parked():
    call = Response(message=Message(role="assistant", content=(
        ToolUseBlock(id="b", name="lookup_order", input={"order": 1}),)), stop_reason="tool_use")
    model = ScriptedModel([call, text("ok")])
    agent = make_agent(config={"client_tools": [LOOKUP]}, allowed_tools=("echo",))
    loop = make_loop(model, agent=agent)
    state = State(messages=[Message.user("go")])
    step = loop.turn(state, NeverCancel())
    assert "lookup_order" not in {t.name for t in model.calls[0].tools}
    assert step.next == RunAgain() and step.messages[-1].content[0].is_error

