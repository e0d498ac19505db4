"""Approvals: a tool batch waiting for a human's decisions, from pause to close, in one place.

The lifecycle, and who does what:

1. **Pause.** The loop runs a batch through the chain; a call that HumanInTheLoopMiddleware holds
   answers :class:`~harness.approval_values.AwaitingApproval` instead of a result. :func:`pause`
   keeps what already ran and what waits as a :class:`~harness.approval_values.PendingBatch` on
   ``State.pending_batch`` (persisted with the run). No result message is written, so the
   assistant message holding the calls stays last.
2. **Decide.** ``POST /v1/runs/{id}/approve`` turns the human's answers into exactly one allowed
   decision per waiting call with :func:`decide` (or :class:`InvalidDecisions`, a 422). An edit
   also rewrites the stored assistant message's call to the edited arguments
   (:func:`apply_edits`: the one rewrite of a stored message, so the history shows what ran); the
   model's own arguments stay in the run's ``approval.decided`` event (:func:`decided_event`).
3. **Finish.** The resumed loop sends the waiting calls (:func:`waiting_calls`) through the chain
   again; the middleware turns each decision into what happens with :func:`resolve`, and
   :func:`results_message` answers every call of the batch in call order.
   The context inspector shows that message before the batch finishes (:func:`foresee`), each
   result not known yet (a call still waiting, or one that will run) left empty and said so.
4. **Close.** A run cancelled while its batch waits: :func:`close` answers every call, so the
   stored history never keeps a call without its result — in the loop when a worker sees the
   cancel at a turn boundary, in ``runs.execution.endings.close_paused_batch`` when no worker holds
   the run (a cancel, or a claim that finds one). A cancel in the middle of a batch that has not
   paused yet answers the calls it did not run with :data:`CANCELLED_BEFORE_RUN`.

A batch may also be kept before any call runs (:func:`in_flight`), its calls pending, not held.

Everything here is a pure function of frozen values (:mod:`harness.approval_values`); nothing
reads the database or the clock.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, assert_never

from harness.approval_values import (
    Answer,
    ApprovalDecision,
    PendingBatch,
    PendingCall,
    Result,
    RunCall,
)
from harness.errors import HarnessError
from harness.messages import Message, ToolResultBlock, ToolUseBlock

EVENT_REQUESTED = "approval.requested"
EVENT_DECIDED = "approval.decided"

REJECTED = "The user rejected this tool call."
NO_EDIT = "The user chose to edit this call but gave no arguments."
CANCELLED_BEFORE_RUN = "The run was cancelled before this tool call ran."
CANCELLED_BEFORE_DECISION = "The run was cancelled before this tool call was approved."
CANCELLED_BEFORE_RESULT = "The run was cancelled before the caller sent this tool call's result."
CANCELLED_AFTER_SEND = ("The run was cancelled after this tool call was sent, before its result "
                        "was saved: whether it ran is not known.")


class InvalidDecisions(HarnessError):
    """The decisions do not give exactly one allowed decision per waiting call."""

    code = "invalid_decisions"

    def __init__(self, problems: list[str], batch: PendingBatch) -> None:
        super().__init__("Give exactly one allowed decision for each pending tool call.")
        self.problems = problems
        self.pending = [p.tool_use_id for p in batch.approval_held]


# -- pause ------------------------------------------------------------------------------------

def pause(done: Mapping[str, Result], pending: Sequence[PendingCall], *, turn: int = 0,
          ) -> PendingBatch:
    """The batch ``turn``'s model call made, paused: ``done`` ran, ``pending`` wait."""
    return PendingBatch(done=dict(done), pending=tuple(pending), turn=turn)


def in_flight(calls: Sequence[ToolUseBlock], *, turn: int) -> PendingBatch:
    """A batch kept before any call runs (:class:`harness.chain.BatchGate`): every call pending,
    none held; the next turn runs each through the chain as if new (interrupt_on still holds)."""
    return PendingBatch(pending=tuple(
        PendingCall(tool_use_id=c.id, name=c.name, input=c.input, allowed_decisions=())
        for c in calls), turn=turn)


def requested_event(batch: PendingBatch) -> tuple[str, dict[str, Any]]:
    """The run event a pause emits: which calls wait, what may be decided for each, and why
    each waits (``outcome_unknown``: sent before its worker died, whether it ran unknown). The
    client tools' calls are not listed: :func:`harness.client_calls.requested_event` asks for
    them."""
    return EVENT_REQUESTED, {"pending": [
        {"tool_use_id": p.tool_use_id, "name": p.name,
         "allowed_decisions": list(p.allowed_decisions), "reason": p.reason}
        for p in batch.approval_held]}


# -- decide -----------------------------------------------------------------------------------

def decide(batch: PendingBatch, decisions: Sequence[Mapping[str, Any]]) -> PendingBatch:
    """The batch with one decision per waiting call, or :class:`InvalidDecisions` saying what
    is wrong. Each decision is ``{"tool_use_id", "type", "input"?, "message"?}``, its shape
    already checked by the caller (an edit has an object ``input``, a respond a ``message``).
    The client tools' calls take no decision: their results, recorded or not, are kept."""
    pending = {p.tool_use_id: p for p in batch.approval_held}
    problems = []
    seen: dict[str, ApprovalDecision] = {}
    for d in decisions:
        call_id = d["tool_use_id"]
        call = pending.get(call_id)
        if call is None:
            problems.append(f"{call_id!r} is not a pending tool call of this run.")
        elif call_id in seen:
            problems.append(f"{call_id!r} has more than one decision.")
        elif d["type"] not in call.allowed_decisions:
            problems.append(f"{call_id!r} ({call.name}) allows {list(call.allowed_decisions)}, "
                            f"not {d['type']!r}.")
        else:
            seen[call_id] = ApprovalDecision(type=d["type"], input=d.get("input"),
                                             message=d.get("message"))
    answered = {d["tool_use_id"] for d in decisions}
    problems += [f"{i!r} ({call.name}) needs a decision." for i, call in pending.items()
                 if i not in answered]
    if problems:
        raise InvalidDecisions(problems, batch)
    return replace(batch, decisions={**batch.decisions, **seen})


def apply_edits(message: Message, batch: PendingBatch) -> Message:
    """The assistant message holding a decided batch's calls, each call a human edited carrying
    the edited arguments (the same message when nothing was edited)."""
    edits = {i: d.input for i, d in batch.decisions.items()
             if d.type == "edit" and d.input is not None}
    if not edits:
        return message
    return replace(message, content=tuple(
        replace(b, input=edits[b.id]) if isinstance(b, ToolUseBlock) and b.id in edits else b
        for b in message.content))


def decided_event(batch: PendingBatch) -> tuple[str, dict[str, Any]]:
    """The run event an approval emits: each waiting call's decision; an edit with the arguments
    the model gave (``original_input``, which the stored message no longer shows) and the ones
    that run (``input``); a reject or respond with its ``message``."""
    decided = []
    for call in batch.approval_held:
        d = batch.decisions[call.tool_use_id]
        item: dict[str, Any] = {"tool_use_id": call.tool_use_id, "name": call.name,
                                "type": d.type}
        if d.type == "edit":
            item |= {"original_input": call.input, "input": d.input}
        if d.message is not None:
            item["message"] = d.message
        decided.append(item)
    return EVENT_DECIDED, {"decisions": decided}


# -- finish -----------------------------------------------------------------------------------

# Why a run whose paused batch does not match its history fails (``invalid_state``).
MISMATCHED_BATCH = "The paused tool batch does not match the stored history."


def waiting_calls(batch: PendingBatch, calls: Sequence[ToolUseBlock]) -> list[ToolUseBlock] | None:
    """The calls of ``calls`` (the last assistant message's) that still wait, in call order; None
    when the batch does not answer exactly those calls — then finishing it would write a result
    message that answers the wrong calls."""
    waiting = {p.tool_use_id for p in batch.pending}
    if {c.id for c in calls} != waiting | set(batch.done):
        return None
    return [c for c in calls if c.id in waiting]


def resolve(decision: ApprovalDecision) -> RunCall | Answer:
    """What a recorded decision does to its call.

    * ``approve`` runs the call as the model made it;
    * ``edit`` runs it with the human's arguments (the tool validates them like any call, so a
      bad edit becomes an error result the model reads);
    * ``reject`` answers with an error carrying the human's reason;
    * ``respond`` makes the human's text the (non-error) result;
    * ``result`` makes the caller's output the result of a client tool's call.
    """
    match decision.type:
        case "approve":
            return RunCall()
        case "edit":
            if decision.input is None:
                return Answer(content=NO_EDIT, is_error=True)
            return RunCall(input=decision.input)
        case "reject":
            reason = (decision.message or "").strip()
            return Answer(content=f"{REJECTED} Reason: {reason}" if reason else REJECTED,
                          is_error=True)
        case "respond":
            return Answer(content=decision.message or "", is_error=False)
        case "result":
            return Answer(content=decision.message or "", is_error=decision.is_error,
                          images=decision.images)
        case _:
            assert_never(decision.type)


def results_message(order: Sequence[str], results: Mapping[str, Result]) -> Message:
    """The user message answering the calls ``order`` names, in that order."""
    return Message(role="user", content=tuple(
        ToolResultBlock(tool_use_id=i, content=results[i].content, is_error=results[i].is_error,
                        images=results[i].images)
        for i in order))


# -- foresee ----------------------------------------------------------------------------------

# What a paused batch's call sends when the batch finishes, as far as it is known before then:
# ``ran`` before the pause and ``answered`` by its decision (reject, respond, an edit without
# arguments, a client tool's result the caller sent) have their result; ``will_run`` (approved
# or edited), ``awaiting_decision`` and ``awaiting_result`` (a client tool's call the caller
# has not answered yet) do not yet.
# ``offloaded``: answered with a text too long for the context, sent as a pointer to the file it
# is written to then.
CallOutlook = Literal["ran", "answered", "offloaded", "will_run", "awaiting_decision",
                      "awaiting_result"]
KNOWN: frozenset[CallOutlook] = frozenset({"ran", "answered"})


_UNKNOWN = Result(content="")  # a result not known before the batch finishes, shown empty


@dataclass(frozen=True, kw_only=True)
class ForeseenCall:
    tool_use_id: str
    name: str
    outlook: CallOutlook


def foresee(batch: PendingBatch, calls: Sequence[ToolUseBlock], *,
            offloads: Callable[[str, str], bool] = lambda name, content: False,
            ) -> tuple[Message, tuple[ForeseenCall, ...]]:
    """The results message finishing ``batch`` (the calls of the last assistant message) will
    write, each result that is not known yet empty; and what is known of each call. The
    decisions resolve as :func:`resolve` resolves them when the batch finishes; an answer that
    ``offloads(tool name, content)`` says goes to a file is not known yet either."""
    results: dict[str, Result] = {}
    outlook: list[ForeseenCall] = []
    held = {p.tool_use_id: p for p in batch.held}
    for call in calls:
        seen: CallOutlook
        if call.id in batch.done:
            results[call.id], seen = batch.done[call.id], "ran"
        elif call.id not in batch.decisions:
            seen = ("will_run" if call.id not in held else
                    "awaiting_result" if held[call.id].client else "awaiting_decision")
            results[call.id] = _UNKNOWN
        else:
            match resolve(batch.decisions[call.id]):
                case Answer(content=content) if offloads(call.name, content):
                    results[call.id], seen = _UNKNOWN, "offloaded"
                case Answer(content=content, is_error=is_error, images=shown):
                    results[call.id] = Result(content=content, is_error=is_error, images=shown)
                    seen = "answered"
                case RunCall():
                    results[call.id], seen = _UNKNOWN, "will_run"
                case unreachable:
                    assert_never(unreachable)
        outlook.append(ForeseenCall(tool_use_id=call.id, name=call.name, outlook=seen))
    return results_message([c.id for c in calls], results), tuple(outlook)


# -- close ------------------------------------------------------------------------------------

def close(calls: Sequence[ToolUseBlock], batch: PendingBatch,
          sent: Collection[str] = ()) -> Message:
    """The message that answers every call of a batch its run was cancelled in, in call order:
    the ones that already ran keep their result; a call still waiting answers that the run was
    cancelled — before a decision or the caller's result, or after one (or needing none) but
    before it ran — unless it was sent without its result saved (``sent``, or held for that):
    then it is not known. A client tool's call the caller answered keeps its answer."""
    held = {p.tool_use_id: p for p in batch.held}
    unknown = set(sent) | {p.tool_use_id for p in batch.held if p.reason == "outcome_unknown"}
    results = {}
    for call in calls:
        if call.id in batch.done:
            results[call.id] = batch.done[call.id]
        elif call.id in unknown:
            results[call.id] = Result(content=CANCELLED_AFTER_SEND, is_error=True)
        elif (d := batch.decisions.get(call.id)) is not None and d.type == "result":
            results[call.id] = Result(content=d.message or "", is_error=d.is_error,
                                      images=d.images)  # the caller ran it: its result stays
        elif call.id in batch.decisions or call.id not in held:
            results[call.id] = Result(content=CANCELLED_BEFORE_RUN, is_error=True)
        elif held[call.id].client:
            results[call.id] = Result(content=CANCELLED_BEFORE_RESULT, is_error=True)
        else:
            results[call.id] = Result(content=CANCELLED_BEFORE_DECISION, is_error=True)
    return results_message([c.id for c in calls], results)
