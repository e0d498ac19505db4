"""ToolAllowlistMiddleware: the agent's tool allowlist, enforced last.

It filters the tool list sent to the provider and refuses, with an error result, any call to a
tool outside the allowlist. It sits in the last slot so no earlier middleware (a skill, a
provider of tools) can re-add a forbidden tool: whatever they add passes through here. For the
same reason the run's context overrides that exclude a tool (``tool:<name>``, the inspector's)
are applied here: an excluded tool is not offered, whatever else would offer it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from harness import context, telemetry
from harness.chain import ModelHandler, ModelRequest, ToolCallRequest, ToolHandler, ToolOutcome
from harness.messages import Response
from harness.tools.base import tool_error

NAME = "tool_allowlist"


class ToolAllowlistMiddleware:
    name = NAME

    def __init__(self, *, allowed: Iterable[str] | None) -> None:
        if isinstance(allowed, str):
            raise TypeError("allowed must be a collection of tool names, not a string")
        self.allowed = None if allowed is None else frozenset(allowed)

    def permits(self, tool_name: str) -> bool:
        return self.allowed is None or tool_name in self.allowed

    def wrap_model_call(self, req: ModelRequest, next: ModelHandler) -> Response:
        if excluded := context.active(req.state).excluded_tools:
            if removed := [t for t in req.tools if t.name in excluded]:
                context.applied(req.state).tools.extend(removed)
                req = replace(req, tools=tuple(t for t in req.tools if t.name not in excluded))
        kept = tuple(t for t in req.tools if self.permits(t.name))
        if len(kept) != len(req.tools):
            dropped = sorted(t.name for t in req.tools if not self.permits(t.name))
            telemetry.record_event(telemetry.EVENT_REQUEST_REWRITTEN, {
                telemetry.ATTR_MIDDLEWARE_NAME: NAME,
                telemetry.ATTR_REASON: "tools_not_allowed:" + ",".join(dropped),
            })
            req = replace(req, tools=kept)
        return next(req)

    def wrap_tool_call(self, req: ToolCallRequest, next: ToolHandler) -> ToolOutcome:
        # The tool that would run must be the one the model named: an earlier wrapper cannot
        # slip another tool in under an allowed name.
        if self.permits(req.call.name) and (req.tool is None or req.tool.name == req.call.name):
            return next(req)
        telemetry.record_event(telemetry.EVENT_SHORT_CIRCUITED, {
            telemetry.ATTR_MIDDLEWARE_NAME: NAME, telemetry.ATTR_REASON: "tool_not_allowed",
            telemetry.ATTR_GEN_AI_TOOL_NAME: req.call.name,
        })
        telemetry.tool_short_circuits.add(1, {telemetry.ATTR_MIDDLEWARE_NAME: NAME})
        return tool_error(f"The tool {req.call.name!r} is not available to this agent.")
