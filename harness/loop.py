"""The turn loop. Each turn returns a :data:`NextStep`; the loop only dispatches on it.

The values a turn returns and the protocols its caller supplies are in :mod:`harness.steps`.

A turn: assemble the request through the chain → call the model → keep the assistant message →
run its tool calls through the chain → keep the results → clear per-batch scratch. The caller's
:class:`Checkpointer` then persists the turn (messages, state, usage, events) before the next
one starts, so a run can stop after any turn and resume from there.

Given a :class:`~harness.deltas.DeltaSink`, the loop streams the model's text to it as it
arrives, inside the innermost model handler, so the chain's wrappers still see one model call and
the turn is still committed whole. The tool calls run in :mod:`harness.tool_calls`; the loop
decides what their outcome means (another turn, a pause, a cancel).

Every phase takes what it needs as arguments (the state, the run's control, the tools the model
was offered): no phase leaves anything on the loop object for a later one, so each can be
called, and tested, alone.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TypeVar

from opentelemetry.trace import SpanKind

from harness import approvals, streamed, telemetry
from harness.agent import AgentSpec
from harness.approval_values import Result
from harness.chain import Chain, ModelHandler, ModelRequest
from harness.deltas import DeltaSink
from harness.errors import HarnessError, RunCannotGoOn
from harness.messages import (
    Message,
    Request,
    Response,
    ToolUseBlock,
)
from harness.provider_call import ProviderCall
from harness.providers.base import Provider, StreamEvent, Streaming
from harness.serde import message_to_json
from harness.state import State
from harness.steps import (
    Checkpointer,
    Control,
    Failed,
    FinalOutput,
    Interrupted,
    NextStep,
    RunAgain,
    TurnResult,
)
from harness.tokens.base import Tokenizer
from harness.tokens.tokenizers import tokenizer_for
from harness.tool_calls import run_tools
from harness.tools.base import Tool

HaltT = TypeVar("HaltT")


class Loop:
    """Runs one agent's turns over a chain built once for the run."""

    def __init__(self, *, agent: AgentSpec, chain: Chain, provider: Provider, model: str,
                 tools: Sequence[Tool], purpose: str = "run",
                 deltas: DeltaSink | None = None, prints: Tokenizer | None = None) -> None:
        self.agent = agent
        self.chain = chain
        self.provider = provider
        self.model = model
        self.base_tools = tuple(tools)
        self.purpose = purpose
        self.deltas = deltas
        # Counts the parts of each call it sends, fingerprinted on its usage (harness.fingerprint):
        # a run's own calls, which the inspector compares with later ones. None: not printed.
        self.prints = prints
        self._counter = prints or tokenizer_for(f"{provider.name}:{model}")  # a cut call's usage
        # Decided once per run, not per call: the provider's stream when someone takes deltas.
        self._stream: Callable[[Request], Iterator[StreamEvent]] | None = (
            provider.stream if deltas is not None and isinstance(provider, Streaming) else None)

    # -- the run ---------------------------------------------------------------------------

    def run(self, state: State, *, control: Control,
            checkpointer: Checkpointer[HaltT]) -> NextStep | HaltT:
        """Turns until a terminal step, or until the checkpointer stops the loop (its reason)."""
        attrs = {telemetry.ATTR_GEN_AI_OPERATION: telemetry.SPAN_INVOKE_AGENT,
                 telemetry.ATTR_GEN_AI_AGENT_ID: self.agent.id,
                 telemetry.ATTR_GEN_AI_AGENT_NAME: self.agent.name,
                 telemetry.ATTR_RUN_ID: state.run_id, telemetry.ATTR_SESSION_ID: state.session_id,
                 telemetry.ATTR_TENANT_ID: state.tenant_id}
        with telemetry.span(telemetry.SPAN_INVOKE_AGENT, attrs) as span:
            span.add_event(telemetry.EVENT_MIDDLEWARE_STACK,
                           {telemetry.ATTR_MIDDLEWARE_STACK: self.chain.names})
            if (failed := self.start(state)) is not None:
                return checkpointer.checkpoint(state, failed) or failed.next
            while True:
                started = time.perf_counter()
                result = self.turn(state, control)
                telemetry.turn_duration.record(time.perf_counter() - started)
                halt = checkpointer.checkpoint(state, result)
                if halt is not None:
                    return halt
                match result.next:
                    case RunAgain():
                        continue
                    case FinalOutput() | Interrupted() | Failed() as final:
                        span.set_attribute(telemetry.ATTR_STOP, type(final).__name__)
                        return final

    def start(self, state: State) -> TurnResult | None:
        """The run hooks, once per loop; a hook that cannot let the run start (a required MCP
        server out of reach, a credential not set) ends it in a failed turn, with the events
        emitted so far."""
        try:
            self.chain.before_run(state)
        except HarnessError as exc:
            return TurnResult(turn=state.turn + 1, events=tuple(state.take_events()),
                              next=Failed(exc.code, str(exc)))
        return None

    def close(self) -> None:
        """Let go of what the chain holds for the run (open sessions): the loop's caller calls
        it once the loop is done with, however it ended."""
        self.chain.close()

    def turn(self, state: State, control: Control) -> TurnResult:
        number = state.turn + 1
        if control.cancel_requested():
            return self.cancelled(state, number)
        if state.pending_batch is not None:
            return self.finish_batch(state, control)
        if state.turn >= self.agent.max_turns:
            return TurnResult(turn=number, next=Failed(
                "max_turns", f"The run stopped after {state.turn} turns, the agent's max_turns."))
        try:
            response, offered = self.call_model(state, control)
        except HarnessError as exc:  # failed, or cancelled mid-stream: nothing to keep
            return streamed.ended(state, number, exc)
        assistant = response.message
        state.messages.append(assistant)
        new = [assistant]
        next_step: NextStep = FinalOutput(response.stop_reason)
        calls = assistant.tool_uses
        if calls and self.chain.checkpoints_before(calls):
            # Committed before any call runs: a worker that dies mid-batch leaves these calls,
            # not a new model call's, for the next one to finish (harness.approvals.in_flight).
            state.pending_batch = approvals.in_flight(calls, turn=number)
            return self._end_turn(state, number, new, RunAgain())
        if calls:
            try:
                next_step, tool_message = self.run_batch(calls, calls, state, control, offered,
                                                         turn=number)
            except RunCannotGoOn as exc:  # the batch is kept whole, for the resume to run
                state.pending_batch = approvals.in_flight(calls, turn=number)
                return self._end_turn(state, number, new, Failed(exc.code, str(exc)))
            if tool_message is not None:
                state.messages.append(tool_message)
                new.append(tool_message)
        return self._end_turn(state, number, new, next_step)

    def cancelled(self, state: State, number: int) -> TurnResult:
        """Cancelled at a turn boundary. A batch still waiting (paused, or approved but not run)
        is closed in this turn, so the history never keeps a call without its result."""
        batch = state.pending_batch
        if batch is None:
            return TurnResult(turn=number, next=Interrupted("cancelled"))
        closing = approvals.close(_last_calls(state), batch)
        state.pending_batch = None
        state.messages.append(closing)
        return TurnResult(turn=number, messages=(closing,), next=Interrupted("cancelled"))

    def finish_batch(self, state: State, control: Control) -> TurnResult:
        """A turn without a model call: the paused batch, now decided, runs to its end."""
        batch = state.pending_batch
        assert batch is not None
        if not batch.decided:
            return TurnResult(turn=state.turn + 1, next=Interrupted("paused"))
        batch_calls = _last_calls(state)
        waiting = approvals.waiting_calls(batch, batch_calls)
        if waiting is None:
            return TurnResult(turn=state.turn + 1, next=Failed(
                "invalid_state", approvals.MISMATCHED_BATCH))
        offered = {t.name: t for t in self.chain.tools(state, self.base_tools)}
        try:
            next_step, tool_message = self.run_batch(batch_calls, waiting, state, control,
                                                     offered, done=batch.done, turn=batch.turn)
        except RunCannotGoOn as exc:  # the batch stays as it was, for the resume to run
            return self._end_turn(state, state.turn + 1, [], Failed(exc.code, str(exc)))
        new = []
        if tool_message is not None:
            state.messages.append(tool_message)
            new.append(tool_message)
        return self._end_turn(state, state.turn + 1, new, next_step)

    def _end_turn(self, state: State, number: int, new: list[Message],
                  next_step: NextStep) -> TurnResult:
        state.clear_scratch()
        state.turn = number
        return TurnResult(turn=number, messages=tuple(new), events=tuple(state.take_events()),
                          usage=tuple(state.take_usage()), next=next_step)

    # -- phases ----------------------------------------------------------------------------

    def prepare(self, state: State) -> ModelRequest:
        """The next model request as the chain assembles it (system blocks, tools, history)."""
        return ModelRequest(
            request=Request(model=self.model, messages=tuple(state.messages),
                            **self.agent.settings.request_fields()),
            system=tuple(self.chain.system_blocks(self.agent, state)),
            tools=tuple(self.chain.tools(state, self.base_tools)),
            state=state,
            agent=self.agent,
        )

    def call_model(self, state: State, control: Control | None = None,
                   ) -> tuple[Response, dict[str, Tool]]:
        """The model's response, and the tools it was offered by name (what its calls find)."""
        attrs = {telemetry.ATTR_GEN_AI_OPERATION: telemetry.SPAN_CHAT,
                 telemetry.ATTR_GEN_AI_PROVIDER: self.provider.name,
                 telemetry.ATTR_GEN_AI_REQUEST_MODEL: self.model,
                 telemetry.ATTR_TURN: state.turn + 1}
        prepared = self.prepare(state)
        sent: list[ModelRequest] = []  # the request as the innermost handler received it
        with telemetry.span(telemetry.SPAN_CHAT, attrs, kind=SpanKind.CLIENT) as span:
            response = self.chain.model_call(prepared, self._provider_handler(sent, control))
            if span.is_recording():  # else the attributes, the answer's JSON too, go nowhere
                span.set_attributes({
                    telemetry.ATTR_GEN_AI_RESPONSE_FINISH: [response.stop_reason],
                    **telemetry.usage_attributes(response.usage),
                    **telemetry.content_attributes(state.trace_content,
                                                   telemetry.ATTR_GEN_AI_OUTPUT_MESSAGES,
                                                   [message_to_json(response.message)]),
                })
        offered = sent[-1].tools if sent else prepared.tools
        return response, {t.name: t for t in offered}

    def _provider_handler(self, sent: list[ModelRequest], control: Control | None) -> ModelHandler:
        """The innermost model handler: strip provenance, call the provider, account usage."""
        return ProviderCall(provider=self.provider, model=self.model, purpose=self.purpose,
                            stream=self._stream, deltas=self.deltas, prints=self.prints,
                            counter=self._counter, sent=sent, control=control)

    def run_batch(self, calls: Sequence[ToolUseBlock], to_run: Sequence[ToolUseBlock],
                  state: State, control: Control, offered: Mapping[str, Tool], *,
                  turn: int, done: Mapping[str, Result] | None = None,
                  ) -> tuple[NextStep, Message | None]:
        """Run ``to_run`` of the batch ``calls`` (the rest are ``done``), which the model call
        of ``turn`` made; the message answering every call in call order, or a pause when a
        call awaits a decision (the results so far wait in ``state.pending_batch``, no message
        yet)."""
        results, pending, cancelled = run_tools(self.chain, to_run, state,
                                                control.cancel_requested, offered)
        finished = {**(done or {}), **results}
        if cancelled:
            # The batch never paused: a call a human was about to be asked about did not run
            # either. Every call gets a result, never dangles.
            finished |= {p.tool_use_id: Result(content=approvals.CANCELLED_BEFORE_RUN,
                                               is_error=True) for p in pending}
            state.pending_batch = None
            return Interrupted("cancelled"), approvals.results_message([c.id for c in calls],
                                                                      finished)
        if pending:
            state.pending_batch = approvals.pause(finished, pending, turn=turn)
            if state.pending_batch.approval_held:  # the client calls' event is the server's
                state.emit(*approvals.requested_event(state.pending_batch))
            return Interrupted("paused"), None
        state.pending_batch = None
        return RunAgain(), approvals.results_message([c.id for c in calls], finished)


def _last_calls(state: State) -> tuple[ToolUseBlock, ...]:
    """The tool calls of the last message: a paused batch's calls."""
    return state.messages[-1].tool_uses if state.messages else ()

