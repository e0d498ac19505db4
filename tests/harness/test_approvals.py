"""harness.approvals: the paused batch's lifecycle as pure functions — pause, decide, resolve,
finish and close — and its persisted form."""

from __future__ import annotations

import pytest

from harness import approvals, serde
from harness.approval_values import (
    Answer,
    ApprovalDecision,
    PendingBatch,
    PendingCall,
    Result,
    RunCall,
)
from harness.approvals import (
    CANCELLED_AFTER_SEND,
    CANCELLED_BEFORE_DECISION,
    CANCELLED_BEFORE_RUN,
    NO_EDIT,
    REJECTED,
    InvalidDecisions,
)
from harness.errors import InvalidContent
from harness.messages import Message, TextBlock, ToolUseBlock

X = Result(content="x")  # what call "a" answered before the pause
CALLS = (ToolUseBlock(id="a", name="echo", input={"text": "x"}),
         ToolUseBlock(id="b", name="delete", input={"path": "/b"}),
         ToolUseBlock(id="c", name="delete", input={"path": "/c"}))


def waiting(*ids: str, allowed=("approve", "reject")) -> list[PendingCall]:
    return [PendingCall(tool_use_id=i, name="delete", input={"path": f"/{i}"},
                        allowed_decisions=allowed) for i in ids]


def paused() -> PendingBatch:
    return approvals.pause({"a": X}, waiting("b", "c"))


def test_pause_keeps_what_ran_and_what_waits_and_its_event_lists_the_choices():
    batch = paused()
    assert batch.done == {"a": X} and not batch.decided
    assert approvals.requested_event(batch) == ("approval.requested", {"pending": [
        {"tool_use_id": "b", "name": "delete", "allowed_decisions": ["approve", "reject"],
         "reason": "approval"},
        {"tool_use_id": "c", "name": "delete", "allowed_decisions": ["approve", "reject"],
         "reason": "approval"}]})


def test_decide_records_one_decision_per_waiting_call_and_leaves_the_batch_alone():
    batch = paused()
    decided = approvals.decide(batch, [
        {"tool_use_id": "b", "type": "approve"},
        {"tool_use_id": "c", "type": "reject", "message": "no"}])
    assert decided.decided and batch.decisions == {}
    assert decided.decisions == {"b": ApprovalDecision(type="approve"),
                                 "c": ApprovalDecision(type="reject", message="no")}


@pytest.mark.parametrize(("decisions", "problem"), [
    ([{"tool_use_id": "b", "type": "approve"}], "'c' (delete) needs a decision."),
    ([{"tool_use_id": "b", "type": "approve"}, {"tool_use_id": "b", "type": "approve"},
      {"tool_use_id": "c", "type": "approve"}], "'b' has more than one decision."),
    ([{"tool_use_id": "zz", "type": "approve"}, {"tool_use_id": "b", "type": "approve"},
      {"tool_use_id": "c", "type": "approve"}], "'zz' is not a pending tool call of this run."),
    ([{"tool_use_id": "b", "type": "edit", "input": {}}, {"tool_use_id": "c", "type": "approve"}],
     "'b' (delete) allows ['approve', 'reject'], not 'edit'."),
])
def test_decide_says_what_is_wrong(decisions, problem):
    with pytest.raises(InvalidDecisions) as raised:
        approvals.decide(paused(), decisions)
    assert problem in raised.value.problems and raised.value.pending == ["b", "c"]


@pytest.mark.parametrize(("decision", "outcome"), [
    (ApprovalDecision(type="approve"), RunCall()),
    (ApprovalDecision(type="edit", input={"path": "/other"}), RunCall(input={"path": "/other"})),
    (ApprovalDecision(type="edit"), Answer(content=NO_EDIT, is_error=True)),
    (ApprovalDecision(type="reject", message=" not now "),
     Answer(content=f"{REJECTED} Reason: not now", is_error=True)),
    (ApprovalDecision(type="reject", message="  "), Answer(content=REJECTED, is_error=True)),
    (ApprovalDecision(type="respond", message="done by hand"),
     Answer(content="done by hand", is_error=False)),
])
def test_resolve_says_what_each_decision_does(decision, outcome):
    assert approvals.resolve(decision) == outcome


def test_an_edit_rewrites_only_its_own_call_and_the_event_keeps_the_models_arguments():
    batch = approvals.decide(approvals.pause({"a": X}, waiting(
        "b", "c", allowed=("approve", "edit", "reject"))), [
        {"tool_use_id": "b", "type": "edit", "input": {"path": "/archive/b"}},
        {"tool_use_id": "c", "type": "reject", "message": "keep it"}])
    stored = Message(role="assistant", content=(TextBlock(text="Deleting."), *CALLS), seq=4)
    edited = approvals.apply_edits(stored, batch)
    assert edited.content == (TextBlock(text="Deleting."), CALLS[0],
                              ToolUseBlock(id="b", name="delete", input={"path": "/archive/b"}),
                              CALLS[2])
    assert edited.seq == 4 and stored.content[2].input == {"path": "/b"}  # a new value
    assert approvals.decided_event(batch) == ("approval.decided", {"decisions": [
        {"tool_use_id": "b", "name": "delete", "type": "edit", "original_input": {"path": "/b"},
         "input": {"path": "/archive/b"}},
        {"tool_use_id": "c", "name": "delete", "type": "reject", "message": "keep it"}]})
    unedited = approvals.decide(paused(), [{"tool_use_id": "b", "type": "approve"},
                                           {"tool_use_id": "c", "type": "approve"}])
    assert approvals.apply_edits(stored, unedited) is stored


def test_waiting_calls_are_the_undone_calls_in_order_and_only_for_the_same_batch():
    assert [c.id for c in approvals.waiting_calls(paused(), CALLS)] == ["b", "c"]
    assert approvals.waiting_calls(paused(), CALLS[:2]) is None  # a call of the batch missing
    extra = (*CALLS, ToolUseBlock(id="d", name="echo", input={}))
    assert approvals.waiting_calls(paused(), extra) is None  # a call the batch does not know


def test_close_answers_every_call_in_call_order():
    batch = PendingBatch(done={"a": X}, pending=tuple(waiting("b", "c")),
                         decisions={"b": ApprovalDecision(type="approve")})
    message = approvals.close(CALLS, batch)
    assert message.role == "user"
    assert [(b.tool_use_id, b.content, b.is_error) for b in message.content] == [
        ("a", "x", False), ("b", CANCELLED_BEFORE_RUN, True),
        ("c", CANCELLED_BEFORE_DECISION, True)]


def test_close_says_a_call_sent_without_its_result_saved_is_not_known():
    unknown = PendingCall(tool_use_id="c", name="delete", input={}, reason="outcome_unknown",
                          allowed_decisions=("approve", "reject"))
    in_flight = PendingCall(tool_use_id="b", name="delete", input={}, allowed_decisions=())
    batch = PendingBatch(done={"a": X}, pending=(in_flight, unknown))
    message = approvals.close(CALLS, batch, sent={"b"})
    assert [(b.tool_use_id, b.content, b.is_error) for b in message.content] == [
        ("a", "x", False), ("b", CANCELLED_AFTER_SEND, True), ("c", CANCELLED_AFTER_SEND, True)]


def test_foresee_gives_the_results_known_before_the_batch_runs():
    calls = (*CALLS, ToolUseBlock(id="d", name="delete", input={"path": "/d"}),
             ToolUseBlock(id="e", name="delete", input={"path": "/e"}))
    batch = PendingBatch(done={"a": X}, pending=tuple(waiting("b", "c", "d", "e")),
                         decisions={"b": ApprovalDecision(type="edit", input={"path": "/B"}),
                                    "c": ApprovalDecision(type="reject", message="no"),
                                    "d": ApprovalDecision(type="respond", message="y" * 70)})
    message, seen = approvals.foresee(batch, calls,
                                      offloads=lambda name, content: len(content) > 60)
    assert [(c.tool_use_id, c.outlook) for c in seen] == [
        ("a", "ran"), ("b", "will_run"), ("c", "answered"), ("d", "offloaded"),
        ("e", "awaiting_decision")]
    # The results message the batch will write, in call order; what is not known yet is empty.
    assert [(b.tool_use_id, b.content, b.is_error) for b in message.content] == [
        ("a", "x", False), ("b", "", False), ("c", f"{REJECTED} Reason: no", True),
        ("d", "", False), ("e", "", False)]


def test_results_message_follows_the_order_given():
    message = approvals.results_message(
        ["c", "a"], {"a": Result(content="1"), "c": Result(content="3", is_error=True)})
    assert [(b.tool_use_id, b.content, b.is_error) for b in message.content] == [
        ("c", "3", True), ("a", "1", False)]


def test_the_persisted_form_round_trips_and_refuses_garbage():
    batch = approvals.decide(
        approvals.pause({"a": X}, waiting("b", "c", allowed=("edit", "reject"))),
        [{"tool_use_id": "b", "type": "edit", "input": {"p": 1}},
         {"tool_use_id": "c", "type": "reject", "message": "no"}])
    assert serde.batch_from_json(serde.batch_to_json(batch)) == batch
    for bad in (None, {}, {"pending": [{"name": "x"}], "done": {}}, {"pending": [], "done": 3}):
        with pytest.raises(InvalidContent):
            serde.batch_from_json(bad)
