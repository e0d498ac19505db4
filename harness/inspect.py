"""The context inspector's snapshot: a session's next model request, part by part.

:func:`inspect` never has its own way of building a request. It takes the loop a run of the
session would build (the same factory, the same stores, built ``capture_only``: a middleware
never calls a model, summarization compacts without making a summary, subagents do not run), runs
``before_run`` on the state the next call starts from exactly as a run does — a new run's, or
the session's active run's at its last checkpoint, its todos and its middlewares' state with
it; a batch paused for approval first finished as far as it is known before it runs
(:func:`harness.approvals.foresee`) — and assembles the request through the real chain into a
capture handler in place of the provider. Nothing is called and nothing is
written. It assembles twice — without the overrides, then with them — so every part shows, the
excluded ones too, and both totals are what the chain really builds.

Counts come from the model family's tokenizer (:mod:`harness.tokens`), the estimator where none
fits: each part's content, plus the provider's framing as a line of its own, so the parts sum
exactly to the total. Asked to, the provider's own counter gives the totals instead (then the
framing line is what its total leaves over the parts); for a team's own server, its endpoints
count the parts and the totals, and say which parts its chat template drops
(:mod:`harness.served_snapshot`). What was asked and could not be counted so is said in the
snapshot (``provider_count``), never only by ``counted``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal, NamedTuple

from harness import approvals, context, telemetry
from harness.approvals import ForeseenCall
from harness.chain import ModelRequest
from harness.context import Override, OverrideSet, message_part
from harness.errors import ProviderError
from harness.loop import Loop
from harness.messages import Message, Response
from harness.middleware import filesystem, mcp, prompt_cache, summarization
from harness.middleware._mcp_listing import ServerReport
from harness.providers import openai_wire, split_model
from harness.providers.served_count import ServerCounter
from harness.served_snapshot import CountReport, Groups, served_counts
from harness.snapshot_counts import snapshot_totals
from harness.snapshot_parts import (
    Part,
    group_of,
    message_parts,
    stale_part,
    system_parts,
    tool_parts,
)
from harness.state import State
from harness.tokens.base import Counted, Tokenizer


@dataclass(frozen=True, kw_only=True)
class RunBasis:
    """The run a snapshot's state was restored from."""

    id: str
    status: str
    turn: int  # the turns it has checkpointed


@dataclass(frozen=True, kw_only=True)
class Snapshot:
    system: tuple[Part, ...]
    tools: tuple[Part, ...]
    messages: tuple[Part, ...]
    total_before: int
    total_after: int
    framing: int  # tokens the provider adds around the included parts
    framing_counted: Counted  # how: a published rule, or an estimate
    counted: Counted
    would_compact: bool
    cache_breakpoint: int | None
    # The prompt cache's stable prefix in tokens and the model's minimum, where one is known
    # (below it nothing is marked: cache_breakpoint None).
    cache_prefix_tokens: int | None
    cache_minimum: int | None
    overrides_active: int
    stale: tuple[str, ...]
    request: ModelRequest = field(repr=False)  # what the next call sends, provenance included
    # A batch paused for approval finishes before the call: what each of its calls sends, and
    # the part of the results message finishing it writes (none when nothing is paused).
    batch: tuple[ForeseenCall, ...] = ()
    batch_part: str | None = None
    # The session's active run whose next call this is (from its last checkpoint), and the
    # messages queued behind it, which this call does not send: set by the caller that looked.
    run: RunBasis | None = None
    queued: tuple[Part, ...] = ()
    # Summarization's measure of the request sent (None when the agent does not summarize).
    compaction: summarization.SummarizationReport | None = None
    # Why a run would stop here instead of making this call (its failure's message): a paused
    # batch that does not match the history, or a request too long even compacted.
    would_fail: str | None = None
    # The agent's MCP servers: where their tools come from (the run's listing, the tenant's
    # cache), how old that listing is, and whether the server could be reached.
    mcp_servers: tuple[ServerReport, ...] = ()
    # How ``?counted=provider`` was answered (None: not asked).
    provider_count: CountReport | None = None

    def part(self, part_id: str) -> Part | None:
        return next((p for p in (*self.system, *self.tools, *self.messages, *self.queued)
                     if p.id == part_id), None)


def _capture(loop: Loop, state: State) -> ModelRequest:
    """The request as the innermost handler would hand it to the provider."""
    captured: list[ModelRequest] = []

    def capture(req: ModelRequest) -> Response:
        captured.append(req)
        return Response(message=Message(role="assistant", content=()), stop_reason="end_turn")

    loop.chain.model_call(loop.prepare(state), capture)
    if not captured:  # a wrapper answered without the provider: it sends nothing
        raise ProviderError("the chain answered without a model call; nothing would be sent")
    return captured[0]


class Assembled(NamedTuple):
    before: ModelRequest  # without the overrides
    after: ModelRequest  # what the next call sends
    overrides: OverrideSet  # the overrides applied
    batch: tuple[ForeseenCall, ...]  # a paused batch finished first: what each call sends
    failure: str | None = None  # why the run would fail before the call (a mismatched batch)


def assemble(loop: Loop, state: State, extra: Sequence[Override] = (), *,
             stored: bool = True) -> Assembled:
    """The next request without and with the run's overrides (``extra`` on top of the stored
    ones; ``extra`` alone when not ``stored``: a set previewed in place of the saved one), after
    ``before_run`` as a run starting or resuming from ``state`` does it, and after the batch it
    paused in, if any, finishes."""
    loop.chain.before_run(state)
    batch, failure = _finish_paused(loop, state)
    overrides = (context.active(state) if stored else context.NONE).merged(extra)
    if not overrides:  # nothing to take out: the request sent is the whole request
        context.set_active(state, overrides)
        after = _capture(loop, state)
        return Assembled(after, after, overrides, batch, failure)
    context.set_active(state, context.NONE)
    before = _capture(loop, state)
    context.set_active(state, overrides)
    after = _capture(loop, state)  # last: the batch's reports describe the request sent
    return Assembled(before, after, overrides, batch, failure)


def _finish_paused(loop: Loop, state: State) -> tuple[tuple[ForeseenCall, ...], str | None]:
    """A run paused for approval makes its next call once the batch finishes: ``state`` as
    :meth:`Loop.finish_batch` leaves it, the results message in the history with the seq it
    will be stored with, each result not known before the batch runs left empty (what is known
    of each call is returned). A batch that does not match the history finishes nothing: the
    run fails instead of calling the model (the run's reason is returned)."""
    batch = state.pending_batch
    if batch is None:
        return (), None
    calls = state.messages[-1].tool_uses if state.messages else ()
    if approvals.waiting_calls(batch, calls) is None:
        return (), approvals.MISMATCHED_BATCH
    offloading = [m for m in loop.chain.middlewares
                  if isinstance(m, filesystem.FilesystemMiddleware)]
    results, foreseen = approvals.foresee(
        batch, calls, offloads=lambda name, content: any(
            m.offloads_result(name, content) for m in offloading))
    seq = max((m.seq for m in state.messages if m.seq is not None), default=0) + 1
    state.messages.append(replace(results, seq=seq))
    state.pending_batch = None
    state.clear_scratch()
    state.turn += 1
    return foreseen, None


def left_out(before: ModelRequest, after: ModelRequest) -> list[str]:
    """The parts of ``before`` that ``after`` does not send (excluded, or taken along as a
    pair), in request order."""
    sent = set(context.part_ids(after.system, after.tools, after.request.messages))
    every = context.part_ids(before.system, before.tools, before.request.messages)
    return [p for p in every if p not in sent]


def inspect(loop: Loop, state: State, tokenizer: Tokenizer, *, extra: Sequence[Override] = (),
            stored: bool = True, provider_count: bool = False,
            server: ServerCounter | Literal["none"] | None = None) -> Snapshot:
    """The snapshot of the request the next call of ``state``'s session would send (with
    ``extra`` in place of the stored overrides when not ``stored``); with ``provider_count``,
    counted by ``server``'s endpoints when the model is served from a team's own server
    (``"none"``: one without any), else by the provider's counter."""
    started = time.perf_counter()
    with telemetry.span(telemetry.SPAN_CONTEXT_INSPECT) as span:
        assembled = assemble(loop, state, extra, stored=stored)
        snapshot = replace(_snapshot(assembled, state, tokenizer, as_sent=_wire_form(loop),
                                     counter=loop.provider if provider_count else None,
                                     server=server if provider_count else None),
                           mcp_servers=mcp.report_of(loop.chain.middlewares))
        span.set_attributes({
            telemetry.ATTR_CONTEXT_PARTS_SYSTEM: len(snapshot.system),
            telemetry.ATTR_CONTEXT_PARTS_TOOLS: len(snapshot.tools),
            telemetry.ATTR_CONTEXT_PARTS_MESSAGES: len(snapshot.messages),
            telemetry.ATTR_CONTEXT_TOKENS_BEFORE: snapshot.total_before,
            telemetry.ATTR_CONTEXT_TOKENS_AFTER: snapshot.total_after,
            telemetry.ATTR_CONTEXT_WOULD_COMPACT: snapshot.would_compact,
        })
    telemetry.context_inspect_duration.record(time.perf_counter() - started)
    return snapshot


def _wire_form(loop: Loop) -> Callable[[Message], Message]:
    """How the loop's adapter carries a message's blocks: on OpenAI's wire a failed tool result
    is marked in its content, with no flag (:mod:`harness.providers.openai_wire`). One function
    per wire, the same each time: the parts' previews are cached by it."""
    if split_model(loop.agent.model)[0] != openai_wire.PROVIDER:
        return _as_is
    return _on_openai_wire


def _as_is(message: Message) -> Message:
    return message


def _on_openai_wire(message: Message) -> Message:
    if not message.tool_results:
        return message
    return replace(message, content=tuple(openai_wire.as_sent(b) for b in message.content))


def _snapshot(assembled: Assembled, state: State, tokenizer: Tokenizer, *,
              as_sent: Callable[[Message], Message], counter: object,
              server: ServerCounter | Literal["none"] | None = None) -> Snapshot:
    before, after, overrides, batch, failure = assembled
    cache = prompt_cache.report(state)
    breakpoint = cache.breakpoint if cache is not None else None
    report = summarization.report(state)
    batch_seq = state.messages[-1].seq if batch else None

    def build(counting: Tokenizer) -> Groups:
        return (system_parts(before.system, after.system, overrides, counting, breakpoint),
                tool_parts(before.tools, after.tools, counting, cached=breakpoint is not None),
                message_parts(state.messages, after.request.messages, overrides, counting,
                              as_sent, batch=batch, batch_seq=batch_seq, compaction=report))

    sent, unfiltered = after.to_provider_request(), before.to_provider_request()
    served = None
    if isinstance(server, ServerCounter):
        served = served_counts(server, tokenizer, build, after=after, before=before)
        system, tools, messages = served.groups
    else:
        system, tools, messages = build(tokenizer)
    present = {p.id for p in (*system, *tools, *messages)}
    # The summary is a part exactly when the call is compacted: an override of it is stale
    # otherwise, like any override whose part is not in the request.
    stale = tuple(o.part for o in overrides.overrides if o.part not in present)
    placeholders = {group: tuple(stale_part(o, tokenizer.source) for o in overrides.overrides
                                 if o.part in stale and group_of(o.part) == group)
                    for group in ("system", "tool", "message")}
    # A part the server's template drops is not sent: the parts that sum to the total are the
    # included ones it keeps.
    parts_after = sum(p.tokens for p in (*system, *tools, *messages)
                      if p.included and not p.dropped_by_template)
    totals = snapshot_totals(parts_after, sent, unfiltered, tokenizer, same=before is after,
                             served=served, counter=counter, server=server)
    return Snapshot(
        system=system + placeholders["system"], tools=tools + placeholders["tool"],
        messages=messages + placeholders["message"],
        total_before=totals.before, total_after=totals.after,
        framing=totals.after - parts_after, framing_counted=totals.framing_counted,
        counted=totals.counted, would_compact=bool(report and report.would_compact),
        cache_breakpoint=breakpoint,
        cache_prefix_tokens=cache.prefix_tokens if cache is not None else None,
        cache_minimum=cache.minimum if cache is not None else None,
        overrides_active=len(overrides) - len(stale), stale=stale, request=after,
        batch=batch, batch_part=message_part(batch_seq) if batch_seq is not None else None,
        compaction=report, would_fail=failure or (report.would_fail if report else None),
        provider_count=totals.report)

