"""One trace per run (issue 35): the run's trace context is stored with it, and every time slice
of it, on whichever worker and however late, is a span of that trace.

*Stored.* A run keeps the W3C ``traceparent`` of the span current when it was created
(:func:`current_traceparent`, the default of ``Run.trace_context``): the span of the request
that posted its message (``POST /v1/sessions/{id}/messages``, a trigger's post). It is written
in the insert that creates the run, so it costs no statement, and it is read by the claim,
which reads the whole row anyway. It is no secret, and never leaves the server: no serializer
names it.

*Continued, not only linked.* Each slice's span (:func:`slice_span`) is a child of that stored
context, so the post, every slice, every model and tool call of the run, on any worker, share
one trace id, also across a pause for approval that lasts hours, a crash, a lease taken over or
a resume: what an operator opens to see where a run's time went. The hand-over that brought the
slice (Celery's span of the task, in the trace of whoever sent it: an approve, the reconciler)
is the slice's parent when it is in the run's trace already (the first slice, a slice handed on
by the one before), else a link. The requests that act on a run later (approve, resume, cancel)
stay traces of their own, as their callers' traces, and link to the run's trace
(:func:`mark_request`): a caller's trace is never taken over by a run it did not start.

A run created with nothing traced (a schedule's, a run made with tracing off) has no stored
context; each of its slices is then a trace of its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol

from opentelemetry import trace
from opentelemetry.trace import Link, NonRecordingSpan, Span, SpanContext, TraceFlags

from harness import telemetry


class Run(Protocol):
    """What this module reads of a run (``runs.models.Run``, which imports this module for its
    column's default: named by shape, not imported)."""

    pk: Any
    session_id: Any
    trace_context: str
    turn: int
    epoch: int

    @property
    def session(self) -> Any: ...

# The length of a version-00 traceparent: 00-<32 hex>-<16 hex>-<2 hex>.
TRACEPARENT_LENGTH = 55


def current_traceparent() -> str:
    """The traceparent of the current span, or "" when nothing is traced."""
    if not telemetry.tracing():
        return ""
    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return ""
    return (f"00-{context.trace_id:032x}-{context.span_id:016x}-"
            f"{int(context.trace_flags):02x}")


def stored_context(traceparent: str) -> SpanContext | None:
    """The span context a stored traceparent names, or None (empty or not one)."""
    parts = traceparent.split("-")
    if len(traceparent) != TRACEPARENT_LENGTH or len(parts) != 4 or parts[0] != "00":
        return None
    try:
        trace_id, span_id, flags = int(parts[1], 16), int(parts[2], 16), int(parts[3], 16)
    except ValueError:
        return None
    context = SpanContext(trace_id, span_id, is_remote=True, trace_flags=TraceFlags(flags))
    return context if context.is_valid else None


def run_attributes(run: Run) -> dict[str, str]:
    return {telemetry.ATTR_RUN_ID: str(run.pk), telemetry.ATTR_SESSION_ID: str(run.session_id)}


@contextmanager
def slice_span(run: Run, owner: str) -> Iterator[Span]:
    """The span of one slice of ``run`` (claimed by ``owner``), in the run's trace."""
    current = trace.get_current_span()
    if not telemetry.tracing():
        yield current
        return
    handed = current.get_span_context()
    stored = stored_context(run.trace_context)
    parent, links = None, []
    if stored is not None and not (handed.is_valid and handed.trace_id == stored.trace_id):
        parent = trace.set_span_in_context(NonRecordingSpan(stored))
        if handed.is_valid:
            links.append(Link(handed, {telemetry.ATTR_LINK_REASON: "handover"}))
    attrs: dict[str, str | int] = {
        **run_attributes(run), telemetry.ATTR_TENANT_ID: str(run.session.tenant_id),
        telemetry.ATTR_TURN: run.turn, telemetry.ATTR_EPOCH: run.epoch,
        telemetry.ATTR_WORKER: owner}
    with telemetry.tracer.start_as_current_span(
            telemetry.SPAN_RUN_SLICE, context=parent, links=links, attributes=attrs,
            record_exception=False, set_status_on_exception=False) as span:
        try:
            yield span
        except BaseException as exc:
            telemetry.failed(span, telemetry.error_type(exc))
            raise


def mark_request(run: Run, *, link: bool = True) -> None:
    """On the current request's span: the run and session it acts on, and (``link``) a link to
    the run's trace when it is another one (an approve, a resume, a cancel)."""
    current = trace.get_current_span()
    if not current.is_recording():
        return
    current.set_attributes(run_attributes(run))
    stored = stored_context(run.trace_context) if link else None
    if stored is not None and stored.trace_id != current.get_span_context().trace_id:
        current.add_link(stored, {telemetry.ATTR_LINK_REASON: "run"})
