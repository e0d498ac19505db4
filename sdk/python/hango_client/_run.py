"""Driving a run to its answer (:meth:`Client.run`): wait until it ends or parks; when it waits
for client tools (``requires_action``), run the caller's functions and submit what they
answered; when it waits for an approval, ask ``on_approval`` (or stop, with
:class:`ApprovalRequired`). The decisions are pure functions here; the two clients' loops
(sync and async) only do the waiting and the calling.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from hango_client.errors import ApprovalRequired, RunCancelled, RunFailed
from hango_client.types import Answer, Decision, Run, ToolCall, ToolResult

PARKED_PAUSE = 0.5  # seconds between reads of a run parked on calls already answered
# A client tool's function: called with the call's input as keyword arguments; it answers text,
# content blocks (a list of dicts), or anything else JSON can write (sent as its JSON text).
ToolFunction = Callable[..., Any]
# Decides the calls a run waits to have approved: given the run (its ``pending_approvals``),
# the decisions to send.
ApprovalHandler = Callable[[Run], list[Decision]]


@dataclass(frozen=True)
class Wait:
    """The run is moving (or queued): wait on it, after ``pause`` seconds. A run still parked
    on calls already answered (the server resuming it) would answer a wait at once: the pause
    keeps that from becoming a busy loop."""

    pause: float = 0.0


@dataclass(frozen=True)
class CallTools:
    """The run waits on these client tool calls (those not answered yet)."""

    calls: list[ToolCall]


@dataclass(frozen=True)
class Approve:
    """The run waits for an approval, and the caller gave ``on_approval``."""


Step = Answer | Wait | CallTools | Approve


def next_step(run: Run, *, answered: set[str], can_approve: bool) -> Step:
    """What to do with ``run`` as last read; raises when it ended without an answer."""
    status = run["status"]
    if status == "completed":
        output = run.get("output") or {"text": "", "stop_reason": ""}
        return Answer(text=output["text"], stop_reason=output["stop_reason"], run=run)
    if status == "failed":
        error = run.get("error") or {}
        raise RunFailed(f"run {run['id']} failed: {error.get('message', error)}", run=run)
    if status == "cancelled":
        raise RunCancelled(f"run {run['id']} was cancelled", run=run)
    if status == "requires_action":
        action = run.get("required_action")
        pending = action["tool_calls"] if action else []
        calls = [call for call in pending if call["tool_use_id"] not in answered]
        return CallTools(calls) if calls else Wait(pause=PARKED_PAUSE)
    if status == "awaiting_approval":
        if not can_approve:
            raise ApprovalRequired(f"run {run['id']} waits for an approval (pass on_approval= "
                                   "to decide it, or approve it with runs.approve)", run=run)
        return Approve()
    return Wait()


def tool_function(call: ToolCall, tools: Mapping[str, ToolFunction]) -> ToolFunction | None:
    return tools.get(call["name"])


def missing_tool(call: ToolCall, tools: Mapping[str, ToolFunction]) -> ToolResult:
    known = ", ".join(sorted(tools)) or "none"
    return {"tool_use_id": call["tool_use_id"], "is_error": True,
            "output": f"The caller has no function for the tool {call['name']!r} "
                      f"(it runs: {known})."}


def result_of(call: ToolCall, value: Any) -> ToolResult:
    """What a function answered, as the result to submit."""
    if isinstance(value, str):
        output: Any = value
    elif isinstance(value, list) and all(isinstance(block, dict) for block in value):
        output = value  # content blocks
    else:
        output = json.dumps(value, default=str)
    return {"tool_use_id": call["tool_use_id"], "output": output}


def error_of(call: ToolCall, exc: BaseException) -> ToolResult:
    """A function that raised: the model is told, as a failed result, what went wrong."""
    return {"tool_use_id": call["tool_use_id"], "is_error": True,
            "output": f"{type(exc).__name__}: {exc}"}


def arguments(call: ToolCall) -> dict[str, Any]:
    value = call.get("input")
    return dict(value) if isinstance(value, Mapping) else {}
