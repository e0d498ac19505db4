"""HumanInTheLoopMiddleware: calls to the tools named in ``interrupt_on`` wait for a human.

A call to such a tool with no decision yet is answered with :func:`await_approval` instead of
running; the loop then pauses the batch (``State.pending_batch``) and the run waits, holding no
worker and no broker message, until ``POST /v1/runs/{id}/approve`` writes one decision per
pending call. On the resumed turn the loop sends the still-pending calls through the chain again
and this middleware applies the decision it finds for the call:

* ``approve`` runs the call as the model made it;
* ``edit`` runs it with the human's arguments (the tool validates them like any call, so a bad
  edit becomes an error result the model reads);
* ``reject`` answers with an error result carrying the human's reason, never running the tool;
* ``respond`` makes the human's text the (non-error) result, never running the tool.

A recorded decision is applied even if ``interrupt_on`` changed since the pause: a rejected call
must never run because the agent was edited in between.

It sits after memory and before the allowlist: innermost but for the allowlist, so every outer
wrapper sees the call first, and the allowlist still refuses a forbidden tool after approval.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, assert_never

from harness import telemetry
from harness.chain import ToolCallRequest, ToolHandler
from harness.loop import CANCELLED_BEFORE_RUN
from harness.messages import Message, ToolResultBlock, ToolUseBlock
from harness.state import DECISIONS, ApprovalDecision, PendingBatch
from harness.tools.base import ToolResult, await_approval, tool_error

if TYPE_CHECKING:
    from harness.stack import StackConfig

NAME = "human_in_the_loop"
WHY = ("calls to the tools in the agent's interrupt_on pause the run until a human decides; "
       "always present, so a decision is applied even if interrupt_on changed since the pause")

REJECTED = "The user rejected this tool call."
CANCELLED_BEFORE_DECISION = "The run was cancelled before this tool call was approved."


class HumanInTheLoopMiddleware:
    name = NAME

    def __init__(self, *, interrupt_on: Mapping[str, Sequence[str]]) -> None:
        if not isinstance(interrupt_on, Mapping):
            raise ValueError("interrupt_on must map tool names to their decisions")
        checked: dict[str, tuple[str, ...]] = {}
        for tool, decisions in interrupt_on.items():
            if not isinstance(tool, str) or not tool:
                raise ValueError(f"interrupt_on: {tool!r} is not a tool name")
            if isinstance(decisions, str) or not decisions:
                raise ValueError(f"interrupt_on[{tool!r}] must be a non-empty list of decisions")
            unknown = [d for d in decisions if d not in DECISIONS]
            if unknown:
                raise ValueError(f"interrupt_on[{tool!r}]: unknown decisions {unknown}; "
                                 f"use {list(DECISIONS)}")
            checked[tool] = tuple(dict.fromkeys(decisions))
        self.interrupt_on = checked

    def wrap_tool_call(self, req: ToolCallRequest, next: ToolHandler) -> ToolResult:
        batch = req.state.pending_batch
        decision = batch.decisions.get(req.call.id) if batch is not None else None
        if decision is not None:
            return self._apply(decision, req, next)
        allowed = self.interrupt_on.get(req.call.name)
        if allowed is None or req.tool is None:  # an unknown tool's error needs no human
            return next(req)
        telemetry.record_event(telemetry.EVENT_APPROVAL_REQUESTED, {
            telemetry.ATTR_MIDDLEWARE_NAME: NAME, telemetry.ATTR_GEN_AI_TOOL_NAME: req.call.name,
        })
        return await_approval(allowed)

    def _apply(self, decision: ApprovalDecision, req: ToolCallRequest,
               next: ToolHandler) -> ToolResult:
        telemetry.record_event(telemetry.EVENT_APPROVAL_APPLIED, {
            telemetry.ATTR_MIDDLEWARE_NAME: NAME, telemetry.ATTR_GEN_AI_TOOL_NAME: req.call.name,
            telemetry.ATTR_APPROVAL_DECISION: decision.type,
        })
        match decision.type:
            case "approve":
                return next(req)
            case "edit":
                if decision.input is None:
                    return tool_error("The user chose to edit this call but gave no arguments.")
                return next(replace(req, call=replace(req.call, input=decision.input)))
            case "reject":
                reason = (decision.message or "").strip()
                return tool_error(f"{REJECTED} Reason: {reason}" if reason else REJECTED)
            case "respond":
                return ToolResult(content=decision.message or "")
            case _:
                assert_never(decision.type)


def cancelled_batch_message(calls: Sequence[ToolUseBlock], batch: PendingBatch) -> Message:
    """The tool-result message that closes a paused batch when its run is cancelled.

    Every call of the batch gets a result, in call order: the ones that already ran keep theirs;
    a call still waiting answers that the run was cancelled (before a decision, or after one but
    before it ran). So the stored history never holds a tool call without its result."""
    blocks = []
    for call in calls:
        if call.id in batch.done:
            content, is_error = batch.done[call.id]
        elif call.id in batch.decisions:
            content, is_error = CANCELLED_BEFORE_RUN, True
        else:
            content, is_error = CANCELLED_BEFORE_DECISION, True
        blocks.append(ToolResultBlock(tool_use_id=call.id, content=content, is_error=is_error))
    return Message(role="user", content=tuple(blocks))


def from_config(cfg: StackConfig) -> HumanInTheLoopMiddleware:
    # Always in the stack, even with no interrupt_on: a decision recorded while the agent had
    # one must still be applied after an edit removed it (a rejected call must never run).
    interrupt_on: Any = cfg.agent.config.get("interrupt_on") or {}
    return HumanInTheLoopMiddleware(interrupt_on=interrupt_on)
