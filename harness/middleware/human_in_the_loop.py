"""HumanInTheLoopMiddleware: calls to the tools named in ``interrupt_on`` wait for a human.

A call to such a tool with no decision yet is answered with
:class:`~harness.approval_values.AwaitingApproval` instead of running; the loop then pauses the
batch and the run waits, holding no worker and no broker message, until
``POST /v1/runs/{id}/approve`` records one decision per waiting call. On the resumed turn the loop
sends the waiting calls through the chain again, and this middleware applies the decision it finds
for the call (:func:`harness.approvals.resolve`: approve and edit run the call, reject and respond
answer it without running the tool). The whole lifecycle lives in :mod:`harness.approvals`.

A recorded decision is applied even if ``interrupt_on`` changed since the pause: a rejected call
must never run because the agent was edited in between.

It sits after memory and before the allowlist: innermost but for the allowlist, so every outer
wrapper sees the call first, and the allowlist still refuses a forbidden tool after approval.
"""

from __future__ import annotations

from dataclasses import replace
from typing import assert_never

from harness import approvals, telemetry
from harness.approval_values import Answer, AwaitingApproval, InterruptOn, RunCall
from harness.chain import ToolCallRequest, ToolHandler, ToolOutcome
from harness.deps import StackConfig
from harness.tools.base import ToolResult

NAME = "human_in_the_loop"
WHY = ("calls to the tools in the agent's interrupt_on pause the run until a human decides; "
       "always present, so a decision is applied even if interrupt_on changed since the pause")


class HumanInTheLoopMiddleware:
    name = NAME

    def __init__(self, *, interrupt_on: InterruptOn) -> None:
        # Validated once, by the agent's config (harness.agent.AgentConfig): taken as it is.
        self.interrupt_on = interrupt_on

    def wrap_tool_call(self, req: ToolCallRequest, next: ToolHandler) -> ToolOutcome:
        batch = req.state.pending_batch
        decision = batch.decisions.get(req.call.id) if batch is not None else None
        if decision is not None:
            telemetry.record_event(telemetry.EVENT_APPROVAL_APPLIED, {
                telemetry.ATTR_MIDDLEWARE_NAME: NAME,
                telemetry.ATTR_GEN_AI_TOOL_NAME: req.call.name,
                telemetry.ATTR_APPROVAL_DECISION: decision.type,
            })
            match approvals.resolve(decision):
                case RunCall(input=edited):
                    edited_req = req if edited is None else replace(
                        req, call=replace(req.call, input=edited))
                    return next(edited_req)
                case Answer(content=content, is_error=is_error):
                    return ToolResult(content=content, is_error=is_error)
                case unreachable:
                    assert_never(unreachable)
        allowed = self.interrupt_on.get(req.call.name)
        if allowed is None or req.tool is None:  # an unknown tool's error needs no human
            return next(req)
        telemetry.record_event(telemetry.EVENT_APPROVAL_REQUESTED, {
            telemetry.ATTR_MIDDLEWARE_NAME: NAME, telemetry.ATTR_GEN_AI_TOOL_NAME: req.call.name,
        })
        return AwaitingApproval(allowed_decisions=allowed)


def from_config(cfg: StackConfig) -> HumanInTheLoopMiddleware:
    # Always in the stack, even with no interrupt_on: a decision recorded while the agent had
    # one must still be applied after an edit removed it (a rejected call must never run).
    return HumanInTheLoopMiddleware(interrupt_on=cfg.agent.config.interrupt_on)
