"""A turn's tool calls run through the chain: each call in its own span, a call that awaits a
human's decision set aside, the run's cancel check made before every call.

The loop (:mod:`harness.loop`) decides what a batch's outcome means (another turn, a pause, a
cancel); this module only runs the calls and reports, for each, its result or that it waits.
:func:`run_tool` is the innermost tool handler the chain's wrappers end in.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence

from harness import approvals, images, telemetry
from harness.approval_values import AwaitingApproval, PendingCall, Result
from harness.chain import Chain, ToolCallRequest, ToolOutcome
from harness.messages import ToolUseBlock
from harness.state import State
from harness.tools.base import Tool, ToolContext, ToolResult, tool_error

EVENT_TOOL_RESULT = "tool.result"  # the run event each finished tool call emits


def run_tools(chain: Chain, calls: Sequence[ToolUseBlock], state: State,
              cancel_requested: Callable[[], bool], offered: Mapping[str, Tool],
              ) -> tuple[dict[str, Result], list[PendingCall], bool]:
    """Every call through ``chain``: (results by call id, calls awaiting approval, cancelled).
    ``cancel_requested`` is checked before each call, and each tool is given it; on cancel, the
    rest answer 'cancelled'."""
    results: dict[str, Result] = {}
    pending: list[PendingCall] = []
    names = tuple(offered)
    for index, call in enumerate(calls):
        if cancel_requested():
            results |= {c.id: Result(content=approvals.CANCELLED_BEFORE_RUN, is_error=True)
                        for c in calls[index:]}
            return results, pending, True
        attrs = {
            telemetry.ATTR_GEN_AI_OPERATION: telemetry.SPAN_EXECUTE_TOOL,
            telemetry.ATTR_GEN_AI_TOOL_NAME: call.name,
            telemetry.ATTR_GEN_AI_TOOL_CALL_ID: call.id,
        }
        with telemetry.span(telemetry.SPAN_EXECUTE_TOOL, attrs) as span:
            request = ToolCallRequest(call=call, state=state, tool=offered.get(call.name),
                                      offered=names, cancel_requested=cancel_requested)
            started = time.perf_counter()
            outcome = chain.tool_call(request, run_tool)
            failed = isinstance(outcome, ToolResult) and outcome.is_error
            span.set_attribute(telemetry.ATTR_TOOL_IS_ERROR, failed)
            if failed:  # the model is told in the result; the trace says it as a failed span
                telemetry.failed(span, "tool_error")
            if isinstance(outcome, ToolResult):  # not a call set aside for a human's decision
                name = call.name if call.name in offered else telemetry.UNKNOWN_TOOL
                telemetry.record_tool_call(name, time.perf_counter() - started, failed)
        if isinstance(outcome, AwaitingApproval):
            pending.append(PendingCall(tool_use_id=call.id, name=call.name, input=call.input,
                                       allowed_decisions=outcome.allowed_decisions,
                                       reason=outcome.reason))
            continue
        # The result as the history keeps it: an image no model can be sent becomes a line of
        # text here, after every wrapper, so none adds one unchecked.
        kept = images.admit(outcome)
        results[call.id] = Result(content=kept.content, is_error=kept.is_error,
                                  images=kept.images)
        state.emit(EVENT_TOOL_RESULT, {"tool_use_id": call.id, "name": call.name,
                                       "is_error": outcome.is_error})
    return results, pending, False


def run_tool(req: ToolCallRequest) -> ToolOutcome:
    """The innermost tool handler."""
    if req.tool is None:
        offered = ", ".join(sorted(req.offered)) or "none"
        return tool_error(f"There is no tool named {req.call.name!r}. Available: {offered}.")
    return req.tool.run(req.call.input, ToolContext(state=req.state, call=req.call,
                                                    cancel_requested=req.cancel_requested))
