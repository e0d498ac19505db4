"""The turn loop. Each turn returns a :data:`NextStep`; the loop only dispatches on it.

A turn: assemble the request through the chain → call the model → keep the assistant message →
run its tool calls through the chain → keep the results → clear per-batch scratch. The caller's
:class:`Checkpointer` then persists the turn (messages, state, usage, events) before the next
one starts, so a run can stop after any turn and resume from there.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from opentelemetry.trace import SpanKind

from harness import telemetry
from harness.agent import AgentSpec
from harness.chain import Chain, ModelRequest, ToolCallRequest
from harness.errors import HarnessError
from harness.messages import (
    Message,
    ModelUsage,
    Request,
    Response,
    StopReason,
    ToolResultBlock,
    ToolUseBlock,
)
from harness.providers.base import Provider
from harness.serde import message_to_json
from harness.state import PendingBatch, PendingCall, State
from harness.tools.base import Tool, ToolContext, ToolResult, tool_error

CANCELLED_BEFORE_RUN = "The run was cancelled before this tool call ran."


@dataclass(frozen=True)
class RunAgain:
    """The model called tools: another turn follows."""


@dataclass(frozen=True)
class FinalOutput:
    stop_reason: StopReason


@dataclass(frozen=True)
class Interrupted:
    reason: Literal["cancelled", "paused"]


@dataclass(frozen=True)
class Failed:
    code: str
    message: str


NextStep = RunAgain | FinalOutput | Interrupted | Failed


@dataclass(kw_only=True)
class TurnResult:
    turn: int  # the turn number this result completes (1-based)
    messages: list[Message] = field(default_factory=list)
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    usage: list[ModelUsage] = field(default_factory=list)
    next: NextStep = field(default_factory=RunAgain)


class Control(Protocol):
    def cancel_requested(self) -> bool:
        """Checked at every turn boundary and before every tool call."""
        ...


class Checkpointer(Protocol):
    def checkpoint(self, state: State, result: TurnResult) -> bool:
        """Persist a finished turn. False stops the loop at once (fenced out, slice over)."""
        ...


class NeverCancel:
    def cancel_requested(self) -> bool:
        return False


class Loop:
    """Runs one agent's turns over a chain built once for the run."""

    def __init__(self, *, agent: AgentSpec, chain: Chain, provider: Provider, model: str,
                 tools: Sequence[Tool], purpose: str = "run") -> None:
        self.agent = agent
        self.chain = chain
        self.provider = provider
        self.model = model
        self.base_tools = tuple(tools)
        self.purpose = purpose
        self._offered: dict[str, Tool] = {}
        self._control: Control = NeverCancel()

    # -- the run ---------------------------------------------------------------------------

    def run(self, state: State, *, control: Control, checkpointer: Checkpointer) -> NextStep | None:
        """Turns until a terminal step; None when the checkpointer stopped the loop."""
        attrs = {
            telemetry.ATTR_GEN_AI_OPERATION: telemetry.SPAN_INVOKE_AGENT,
            telemetry.ATTR_GEN_AI_AGENT_ID: self.agent.id,
            telemetry.ATTR_GEN_AI_AGENT_NAME: self.agent.name,
            telemetry.ATTR_RUN_ID: state.run_id,
            telemetry.ATTR_SESSION_ID: state.session_id,
            telemetry.ATTR_TENANT_ID: state.tenant_id,
        }
        with telemetry.span(telemetry.SPAN_INVOKE_AGENT, attrs) as span:
            span.add_event(telemetry.EVENT_MIDDLEWARE_STACK,
                           {telemetry.ATTR_MIDDLEWARE_STACK: self.chain.names})
            self.chain.before_run(state)
            while True:
                started = time.perf_counter()
                result = self.turn(state, control)
                telemetry.turn_duration.record(time.perf_counter() - started)
                if not checkpointer.checkpoint(state, result):
                    return None
                match result.next:
                    case RunAgain():
                        continue
                    case FinalOutput() | Interrupted() | Failed() as final:
                        span.set_attribute(telemetry.ATTR_STOP, type(final).__name__)
                        return final

    def turn(self, state: State, control: Control) -> TurnResult:
        number = state.turn + 1
        if control.cancel_requested():
            return TurnResult(turn=number, next=Interrupted("cancelled"))
        if state.pending_batch is not None:
            return self.finish_batch(state, control)
        if state.turn >= self.agent.max_turns:
            return TurnResult(turn=number, next=Failed(
                "max_turns", f"The run stopped after {state.turn} turns, the agent's max_turns."))
        try:
            response = self.call_model(state)
        except HarnessError as exc:
            return TurnResult(turn=number, usage=state.take_usage(), events=state.take_events(),
                              next=Failed(exc.code, str(exc)))
        assistant = response.message
        state.messages.append(assistant)
        new = [assistant]
        next_step: NextStep = FinalOutput(response.stop_reason)
        calls = assistant.tool_uses
        if calls:
            next_step, tool_message = self.run_batch(calls, state, control)
            if tool_message is not None:
                state.messages.append(tool_message)
                new.append(tool_message)
        return self._end_turn(state, number, new, next_step)

    def finish_batch(self, state: State, control: Control) -> TurnResult:
        """A turn without a model call: the paused batch, now decided, runs to its end."""
        batch = state.pending_batch
        assert batch is not None
        if not batch.decided:
            return TurnResult(turn=state.turn + 1, next=Interrupted("paused"))
        waiting = {p.tool_use_id for p in batch.pending}
        batch_calls = state.messages[-1].tool_uses if state.messages else ()
        if {c.id for c in batch_calls} != waiting | set(batch.done):
            # The paused batch must answer exactly the calls of the last assistant message;
            # anything else would write a result message that answers the wrong calls.
            return TurnResult(turn=state.turn + 1, next=Failed(
                "invalid_state", "The paused tool batch does not match the stored history."))
        calls = [c for c in batch_calls if c.id in waiting]
        self._offered = {t.name: t for t in self.chain.tools(state, self.base_tools)}
        next_step, tool_message = self.run_batch(calls, state, control, done=batch.done,
                                                 order=[c.id for c in batch_calls])
        new = []
        if tool_message is not None:
            state.messages.append(tool_message)
            new.append(tool_message)
        return self._end_turn(state, state.turn + 1, new, next_step)

    def _end_turn(self, state: State, number: int, new: list[Message],
                  next_step: NextStep) -> TurnResult:
        state.clear_scratch()
        state.turn = number
        return TurnResult(turn=number, messages=new, events=state.take_events(),
                          usage=state.take_usage(), next=next_step)

    # -- phases ----------------------------------------------------------------------------

    def prepare(self, state: State) -> ModelRequest:
        """The next model request as the chain assembles it (system blocks, tools, history)."""
        return ModelRequest(
            request=Request(model=self.model, messages=tuple(state.messages),
                            max_tokens=self.agent.max_tokens),
            system=tuple(self.chain.system_blocks(self.agent, state)),
            tools=tuple(self.chain.tools(state, self.base_tools)),
            state=state,
            agent=self.agent,
        )

    def call_model(self, state: State) -> Response:
        attrs = {
            telemetry.ATTR_GEN_AI_OPERATION: telemetry.SPAN_CHAT,
            telemetry.ATTR_GEN_AI_PROVIDER: self.provider.name,
            telemetry.ATTR_GEN_AI_REQUEST_MODEL: self.model,
            telemetry.ATTR_TURN: state.turn + 1,
        }
        with telemetry.span(telemetry.SPAN_CHAT, attrs, kind=SpanKind.CLIENT) as span:
            response = self.chain.model_call(self.prepare(state), self._call_provider)
            span.set_attributes({
                telemetry.ATTR_GEN_AI_RESPONSE_FINISH: [response.stop_reason],
                telemetry.ATTR_GEN_AI_INPUT_TOKENS: response.usage.input_tokens,
                telemetry.ATTR_GEN_AI_OUTPUT_TOKENS: response.usage.output_tokens,
                telemetry.ATTR_CACHE_READ_TOKENS: response.usage.cache_read_tokens,
                telemetry.ATTR_CACHE_WRITE_TOKENS: response.usage.cache_write_tokens,
                **telemetry.content_attributes(state.trace_content,
                                               telemetry.ATTR_GEN_AI_OUTPUT_MESSAGES,
                                               [message_to_json(response.message)]),
            })
        return response

    def _call_provider(self, req: ModelRequest) -> Response:
        """The innermost model handler: strip provenance, call the provider, account usage."""
        self._offered = {t.name: t for t in req.tools}
        request = req.to_provider_request()
        if req.state.trace_content:
            from opentelemetry import trace

            trace.get_current_span().set_attributes(telemetry.content_attributes(
                True, telemetry.ATTR_GEN_AI_INPUT_MESSAGES,
                [message_to_json(m) for m in request.messages]))
        response = self.provider.complete(request)
        req.state.record_usage(ModelUsage(purpose=self.purpose, provider=self.provider.name,
                                          model=self.model, usage=response.usage))
        return response

    def run_batch(self, calls: Sequence[ToolUseBlock], state: State, control: Control, *,
                  done: dict[str, tuple[str, bool]] | None = None,
                  order: Sequence[str] | None = None) -> tuple[NextStep, Message | None]:
        """Run a batch; the message holding every result, or a pause when a call awaits a
        decision (the results so far wait in ``state.pending_batch``, no message yet)."""
        results, pending, cancelled = self.run_tools(calls, state, control)
        finished = {**(done or {}), **{r.tool_use_id: (r.content, r.is_error) for r in results}}
        if pending and not cancelled:
            state.pending_batch = PendingBatch(done=finished, pending=pending)
            state.emit("approval.requested", {"pending": [
                {"tool_use_id": p.tool_use_id, "name": p.name,
                 "allowed_decisions": list(p.allowed_decisions)} for p in pending]})
            return Interrupted("paused"), None
        state.pending_batch = None
        for p in pending:  # cancelled while waiting: the calls get a result, never dangle
            finished[p.tool_use_id] = (CANCELLED_BEFORE_RUN, True)
        ids = list(order) if order is not None else [c.id for c in calls]
        message = Message(role="user", content=tuple(
            ToolResultBlock(tool_use_id=i, content=finished[i][0], is_error=finished[i][1])
            for i in ids))
        return (Interrupted("cancelled") if cancelled else RunAgain()), message

    def run_tools(self, calls: Sequence[ToolUseBlock], state: State, control: Control,
                  ) -> tuple[list[ToolResultBlock], list[PendingCall], bool]:
        """Every call of the batch through the chain: (results, calls awaiting approval,
        cancelled). On cancel, the rest answer 'cancelled'."""
        results: list[ToolResultBlock] = []
        pending: list[PendingCall] = []
        self._control = control
        for index, call in enumerate(calls):
            if control.cancel_requested():
                results += [ToolResultBlock(tool_use_id=c.id, content=CANCELLED_BEFORE_RUN,
                                            is_error=True) for c in calls[index:]]
                return results, pending, True
            attrs = {
                telemetry.ATTR_GEN_AI_OPERATION: telemetry.SPAN_EXECUTE_TOOL,
                telemetry.ATTR_GEN_AI_TOOL_NAME: call.name,
                telemetry.ATTR_GEN_AI_TOOL_CALL_ID: call.id,
            }
            with telemetry.span(telemetry.SPAN_EXECUTE_TOOL, attrs) as span:
                request = ToolCallRequest(call=call, state=state, tool=self._offered.get(call.name))
                result = self.chain.tool_call(request, self._run_tool)
                span.set_attribute(telemetry.ATTR_TOOL_IS_ERROR, result.is_error)
            if result.awaiting_approval is not None:
                pending.append(PendingCall(tool_use_id=call.id, name=call.name,
                                           input=call.input,
                                           allowed_decisions=result.awaiting_approval))
                continue
            results.append(ToolResultBlock(tool_use_id=call.id, content=result.content,
                                           is_error=result.is_error))
            state.emit("tool.result", {"tool_use_id": call.id, "name": call.name,
                                       "is_error": result.is_error})
        return results, pending, False

    def _run_tool(self, req: ToolCallRequest) -> ToolResult:
        """The innermost tool handler."""
        if req.tool is None:
            offered = ", ".join(sorted(self._offered)) or "none"
            return tool_error(f"There is no tool named {req.call.name!r}. Available: {offered}.")
        return req.tool.run(req.call.input, ToolContext(
            state=req.state, call=req.call, cancel_requested=self._control.cancel_requested))
