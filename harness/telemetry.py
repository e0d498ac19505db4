"""Every span, event, attribute and metric name hango emits, in one place, plus thin helpers.

Tests and dashboards read these constants; nothing else in the code base spells a telemetry name.
Message content goes on spans only through :func:`content_attributes`, which checks the tenant's
``trace_llm_content`` flag (carried on the run state).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Final

from opentelemetry import metrics, trace
from opentelemetry.trace import NonRecordingSpan, Span, SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from harness.messages import Usage

# Spans
SPAN_INVOKE_AGENT: Final = "invoke_agent"
SPAN_CHAT: Final = "chat"
SPAN_EXECUTE_TOOL: Final = "execute_tool"
SPAN_BEFORE_RUN: Final = "agent.before_run"
SPAN_CONTEXT_INSPECT: Final = "agent.context_inspect"
SPAN_CONTEXT_TRY: Final = "context_try"
# One trace per run (issue 35): each time slice a worker gives a run, and each webhook attempt.
SPAN_RUN_SLICE: Final = "hango.run.slice"
SPAN_WEBHOOK_DELIVER: Final = "hango.webhook.deliver"

# Span events
EVENT_MIDDLEWARE_STACK: Final = "agent.middleware_stack"
EVENT_REQUEST_REWRITTEN: Final = "middleware.request_rewritten"
EVENT_SHORT_CIRCUITED: Final = "middleware.short_circuited"
EVENT_RETRIED: Final = "middleware.retried"
EVENT_TODOS_UPDATED: Final = "agent.todos_updated"
EVENT_REPEAT_CALL_BLOCKED: Final = "middleware.repeat_call_blocked"
EVENT_STATE_MISSING: Final = "middleware.state_missing"
EVENT_HISTORY_REPAIRED: Final = "middleware.history_repaired"
# Compaction and prompt caching (issue 4)
EVENT_SUMMARIZED: Final = "middleware.summarized"
EVENT_SUMMARY_FAILED: Final = "middleware.summary_failed"
EVENT_APPROVAL_REQUESTED: Final = "middleware.approval_requested"
EVENT_APPROVAL_APPLIED: Final = "middleware.approval_applied"
EVENT_STORE_LOAD_FAILED: Final = "middleware.store_load_failed"
EVENT_MEMORY_WRITTEN: Final = "agent.memory_written"
EVENT_SKILL_LOADED: Final = "agent.skill_loaded"
EVENT_TOOL_RESULT_OFFLOADED: Final = "middleware.tool_result_offloaded"
EVENT_SUBAGENT_FINISHED: Final = "agent.subagent_finished"
# The context inspector (issue 9)
EVENT_CONTEXT_OVERRIDE_STALE: Final = "agent.context_override_stale"
EVENT_CONTEXT_OVERRIDE_PAIRED: Final = "agent.context_override_paired"
EVENT_CONTEXT_OVERRIDES_DROPPED: Final = "agent.context_overrides_dropped"

# Attributes
ATTR_MIDDLEWARE_NAME: Final = "hango.middleware.name"
ATTR_MIDDLEWARE_STACK: Final = "hango.middleware.stack"
ATTR_REASON: Final = "hango.middleware.reason"
ATTR_RUN_ID: Final = "hango.run.id"
ATTR_SESSION_ID: Final = "hango.session.id"
ATTR_TENANT_ID: Final = "hango.tenant.id"
ATTR_TURN: Final = "hango.run.turn"
ATTR_STOP: Final = "hango.run.stop_reason"
ATTR_TODOS_PENDING: Final = "hango.todos.pending"
ATTR_TODOS_IN_PROGRESS: Final = "hango.todos.in_progress"
ATTR_TODOS_COMPLETED: Final = "hango.todos.completed"
ATTR_LANGFUSE_TODOS_TOTAL: Final = "langfuse.observation.metadata.todos_total"
ATTR_LANGFUSE_TODOS_COMPLETED: Final = "langfuse.observation.metadata.todos_completed"
ATTR_CACHE_READ_TOKENS: Final = "hango.usage.cache_read_tokens"
ATTR_CACHE_WRITE_TOKENS: Final = "hango.usage.cache_write_tokens"
ATTR_GEN_AI_OPERATION: Final = "gen_ai.operation.name"
ATTR_GEN_AI_PROVIDER: Final = "gen_ai.provider.name"
ATTR_GEN_AI_REQUEST_MODEL: Final = "gen_ai.request.model"
ATTR_GEN_AI_RESPONSE_FINISH: Final = "gen_ai.response.finish_reasons"
ATTR_GEN_AI_INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
ATTR_GEN_AI_OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
ATTR_GEN_AI_AGENT_ID: Final = "gen_ai.agent.id"
ATTR_GEN_AI_AGENT_NAME: Final = "gen_ai.agent.name"
ATTR_GEN_AI_TOOL_NAME: Final = "gen_ai.tool.name"
ATTR_GEN_AI_TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
ATTR_GEN_AI_INPUT_MESSAGES: Final = "gen_ai.input.messages"
ATTR_GEN_AI_OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
ATTR_TOOL_IS_ERROR: Final = "hango.tool.is_error"
# Compaction and prompt caching (issue 4)
ATTR_USAGE_PURPOSE: Final = "hango.usage.purpose"
ATTR_SUMMARY_OUTCOME: Final = "hango.summary.outcome"
ATTR_SUMMARY_MESSAGES: Final = "hango.summary.messages"
ATTR_SUMMARY_THROUGH_SEQ: Final = "hango.summary.through_seq"
ATTR_SUMMARY_TOKENS_BEFORE: Final = "hango.summary.tokens_before"
ATTR_SUMMARY_TOKENS_AFTER: Final = "hango.summary.tokens_after"
ATTR_CACHE_BREAKPOINT: Final = "hango.cache.breakpoint"
ATTR_APPROVAL_DECISION: Final = "hango.approval.decision"
ATTR_MEMORY_FILES: Final = "hango.memory.files"
ATTR_MEMORY_BYTES: Final = "hango.memory.bytes"
ATTR_MEMORY_OMITTED: Final = "hango.memory.omitted"
ATTR_SKILLS_COUNT: Final = "hango.skills.count"
# MCP tool calls (issue 33): the server's name in hango and the tool's name on the server (the
# span's gen_ai.tool.name is the run's name for it, <server>__<tool>).
ATTR_MCP_SERVER: Final = "hango.mcp.server"
ATTR_MCP_TOOL: Final = "hango.mcp.tool"
ATTR_SKILL_NAME: Final = "hango.skill.name"
ATTR_SKILL_TOOLS: Final = "hango.skill.tools"
ATTR_TOOL_RESULT_CHARS: Final = "hango.tool.result_chars"
ATTR_SUBAGENT_NAME: Final = "hango.subagent.name"
# The context inspector (issue 9)
ATTR_CONTEXT_PARTS_SYSTEM: Final = "hango.context.parts.system"
ATTR_CONTEXT_PARTS_TOOLS: Final = "hango.context.parts.tools"
ATTR_CONTEXT_PARTS_MESSAGES: Final = "hango.context.parts.messages"
ATTR_CONTEXT_TOKENS_BEFORE: Final = "hango.context.tokens.before"
ATTR_CONTEXT_TOKENS_AFTER: Final = "hango.context.tokens.after"
ATTR_CONTEXT_WOULD_COMPACT: Final = "hango.context.would_compact"
ATTR_CONTEXT_OVERRIDES: Final = "hango.context.overrides"
ATTR_CONTEXT_EXCLUDED_TOKENS: Final = "hango.context.excluded_tokens"
# A try call's chat span carries it (true); the counter of try calls has the same name.
ATTR_CONTEXT_TRY: Final = "hango.context.try"
ATTR_CONTEXT_PART: Final = "hango.context.part"
ATTR_CONTEXT_OUTCOME: Final = "outcome"
# One trace per run, and the operator's metrics (issue 35). Metric attributes are few-valued:
# never a run, session or tenant id.
ATTR_WORKER: Final = "hango.worker.id"
ATTR_EPOCH: Final = "hango.run.epoch"
ATTR_SLICE_OUTCOME: Final = "hango.run.slice.outcome"
ATTR_RUN_OUTCOME: Final = "hango.run.outcome"
ATTR_LINK_REASON: Final = "hango.link.reason"
ATTR_ERROR_TYPE: Final = "error.type"
ATTR_GEN_AI_TOKEN_TYPE: Final = "gen_ai.token.type"
ATTR_WEBHOOK_EVENT: Final = "hango.webhook.event"
ATTR_WEBHOOK_OUTCOME: Final = "hango.webhook.outcome"
ATTR_WEBHOOK_ATTEMPT: Final = "hango.webhook.attempt"
ATTR_HTTP_STATUS: Final = "http.response.status_code"
ATTR_QUOTA_WHERE: Final = "hango.quota.where"
ATTR_TAKEOVER_BY: Final = "hango.run.takeover.by"  # claim / reconciler

# Metrics
METRIC_BEFORE_RUN_DURATION: Final = "hango.middleware.before_run.duration"
METRIC_TOOL_SHORT_CIRCUITS: Final = "hango.middleware.tool_short_circuits"
METRIC_REPEAT_BLOCKED: Final = "hango.middleware.repeat_blocked"
METRIC_TURN_DURATION: Final = "hango.run.turn.duration"
METRIC_SUMMARIZE_CALLS: Final = "hango.summarization.calls"
METRIC_CACHE_READ_RATIO: Final = "hango.cache.read_ratio"
METRIC_CONTEXT_INSPECT_DURATION: Final = "hango.context.inspect.duration"
METRIC_CONTEXT_OVERRIDES_ACTIVE: Final = "hango.context.overrides.active"
# Issue 35: what an operator alerts on.
METRIC_RUNS_STARTED: Final = "hango.runs.started"
METRIC_RUNS_ENDED: Final = "hango.runs.ended"
METRIC_RUN_DURATION: Final = "hango.run.duration"
METRIC_QUEUE_WAIT: Final = "hango.run.queue_wait"
METRIC_SLICES: Final = "hango.run.slices"
METRIC_RUNS_IN_FLIGHT: Final = "hango.worker.runs_in_flight"
METRIC_LEASE_TAKEOVERS: Final = "hango.run.lease_takeovers"
METRIC_FENCED: Final = "hango.run.fenced"
METRIC_MODEL_DURATION: Final = "gen_ai.client.operation.duration"
METRIC_MODEL_TOKENS: Final = "gen_ai.client.token.usage"
METRIC_TOOL_DURATION: Final = "hango.tool.duration"
METRIC_TOOL_ERRORS: Final = "hango.tool.errors"
METRIC_WEBHOOK_DELIVERIES: Final = "hango.webhook.deliveries"
METRIC_QUOTA_REFUSALS: Final = "hango.quota.refusals"

# A tool name the run was not offered (a model's invention) is counted under this one, so a
# model cannot grow the metrics' series without bound.
UNKNOWN_TOOL: Final = "_unknown"

ALL_NAMES: Final = tuple(value for key, value in dict(globals()).items()
                         if key.startswith(("SPAN_", "EVENT_", "ATTR_", "METRIC_")))

tracer = trace.get_tracer("hango.harness")
_meter = metrics.get_meter("hango.harness")
before_run_duration = _meter.create_histogram(
    METRIC_BEFORE_RUN_DURATION, unit="s", description="Time spent in one before_run hook."
)
tool_short_circuits = _meter.create_counter(
    METRIC_TOOL_SHORT_CIRCUITS, description="Tool calls answered by a middleware without running."
)
repeat_blocked = _meter.create_counter(
    METRIC_REPEAT_BLOCKED, description="Repeated identical tool calls that were blocked."
)
turn_duration = _meter.create_histogram(
    METRIC_TURN_DURATION, unit="s", description="Wall time of one run turn."
)
summarize_calls = _meter.create_counter(
    METRIC_SUMMARIZE_CALLS, description="Summaries made for compaction, by outcome."
)
context_inspect_duration = _meter.create_histogram(
    METRIC_CONTEXT_INSPECT_DURATION, unit="s", description="Time one context inspection takes."
)
context_tries = _meter.create_counter(
    ATTR_CONTEXT_TRY, description="Context try calls, by outcome."
)
cache_read_ratio = _meter.create_histogram(
    METRIC_CACHE_READ_RATIO,
    description="Per model call: cache_read / (input + cache_read + cache_write) tokens.",
)

# Model calls as the GenAI semantic conventions count them (by provider, model, and hango's
# purpose: "run", "summary", …), and tool calls by tool.
model_duration = _meter.create_histogram(METRIC_MODEL_DURATION, unit="s")
model_tokens = _meter.create_histogram(METRIC_MODEL_TOKENS, unit="{token}")
tool_duration = _meter.create_histogram(METRIC_TOOL_DURATION, unit="s")
tool_errors = _meter.create_counter(METRIC_TOOL_ERRORS)

_propagator = TraceContextTextMapPropagator()


def tracing() -> bool:
    """Whether a tracer provider is installed (else every span is the API's no-op)."""
    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


@contextmanager
def span(name: str, attributes: Mapping[str, Any] | None = None,
         kind: SpanKind = SpanKind.INTERNAL) -> Iterator[Span]:
    """A span, current while the block runs. An exception out of the block marks it ERROR with
    the error's code or type only (an exception's message may quote a tool's input or a
    provider's answer), and is raised on."""
    current = trace.get_current_span()
    if isinstance(current, NonRecordingSpan) and not tracing():
        # No tracer provider is set: the API's no-op tracer would hand back the current span and
        # make it current again. The same span, without that context switch (a few per turn).
        yield current
        return
    with tracer.start_as_current_span(name, kind=kind, attributes=dict(attributes or {}),
                                      record_exception=False,
                                      set_status_on_exception=False) as s:
        try:
            yield s
        except BaseException as exc:
            failed(s, error_type(exc))
            raise


def error_type(exc: BaseException) -> str:
    """A short, secret-free name of a failure: a harness error's code, else its class name."""
    code = getattr(exc, "code", None)
    return code if isinstance(code, str) and code else type(exc).__name__


def failed(target: Span, kind: str) -> None:
    """Mark ``target`` failed: status ERROR described by ``kind``, and ``error.type``."""
    if target.is_recording():  # (a no-op span when nothing records)
        target.set_status(Status(StatusCode.ERROR, kind))
        target.set_attribute(ATTR_ERROR_TYPE, kind)


def trace_headers() -> dict[str, str]:
    """The W3C ``traceparent`` (and ``tracestate``) of the current span, for an outgoing request;
    empty when nothing is traced. Never baggage: a caller's baggage is not passed on to model
    providers, MCP servers or webhook receivers."""
    carrier: dict[str, str] = {}
    if tracing():
        _propagator.inject(carrier)
    return carrier


def record_model_call(*, provider: str, model: str, purpose: str, seconds: float,
                      usage: Usage | None, error: str | None = None) -> None:
    """One model call's duration and, when it answered, its input and output tokens."""
    attrs: dict[str, str] = {ATTR_GEN_AI_OPERATION: SPAN_CHAT, ATTR_GEN_AI_PROVIDER: provider,
                             ATTR_GEN_AI_REQUEST_MODEL: model, ATTR_USAGE_PURPOSE: purpose}
    model_duration.record(seconds, attrs if error is None else {**attrs, ATTR_ERROR_TYPE: error})
    if usage is not None and error is None:
        model_tokens.record(usage.input_tokens, {**attrs, ATTR_GEN_AI_TOKEN_TYPE: "input"})
        model_tokens.record(usage.output_tokens, {**attrs, ATTR_GEN_AI_TOKEN_TYPE: "output"})


def record_tool_call(name: str, seconds: float, is_error: bool) -> None:
    """One tool call's duration (``hango.tool.is_error`` says how it went), and its error."""
    tool_duration.record(seconds, {ATTR_GEN_AI_TOOL_NAME: name, ATTR_TOOL_IS_ERROR: is_error})
    if is_error:
        tool_errors.add(1, {ATTR_GEN_AI_TOOL_NAME: name})


def record_event(name: str, attributes: Mapping[str, Any] | None = None) -> None:
    """Add an event to the current span (a no-op when nothing is recording)."""
    current = trace.get_current_span()
    if current.is_recording():
        current.add_event(name, dict(attributes or {}))


def set_attributes(attributes: Mapping[str, Any]) -> None:
    """Set attributes on the current span (a no-op when nothing is recording)."""
    current = trace.get_current_span()
    if current.is_recording():
        current.set_attributes(dict(attributes))


def content_attributes(allowed: bool, key: str, payload: Any) -> dict[str, str]:
    """``{key: json}`` when the tenant allows content on telemetry, else nothing."""
    if not allowed:
        return {}
    return {key: json.dumps(payload, ensure_ascii=False, default=str)}


def usage_attributes(usage: Usage) -> dict[str, int]:
    """The token counts of one model call, as a chat span's attributes."""
    return {ATTR_GEN_AI_INPUT_TOKENS: usage.input_tokens,
            ATTR_GEN_AI_OUTPUT_TOKENS: usage.output_tokens,
            ATTR_CACHE_READ_TOKENS: usage.cache_read_tokens,
            ATTR_CACHE_WRITE_TOKENS: usage.cache_write_tokens}
