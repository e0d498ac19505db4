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
framing line is what its total leaves over the parts).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import NamedTuple

from harness import approvals, context, history, telemetry
from harness.approvals import ForeseenCall
from harness.chain import ModelRequest
from harness.context import Override, OverrideSet, PartKind, SourcedBlock, message_part, part_kind
from harness.errors import ProviderError
from harness.history import is_summary
from harness.loop import Loop
from harness.messages import Message, Response, TextBlock, ToolDef, ToolUseBlock
from harness.middleware import (
    filesystem,
    memory,
    prompt_cache,
    skills,
    subagent,
    summarization,
    todo,
)
from harness.providers import openai_wire, split_model
from harness.providers.base import TokenCounter
from harness.serde import content_to_json, json_text
from harness.state import State
from harness.tokens import Counted, Tokenizer
from harness.tools.base import Tool

PREVIEW_CHARS = 200

_SYSTEM_LABELS = {context.AGENT_PART: "the agent's system prompt", todo.PART: "the todo list",
                  filesystem.PART: "the session's files", skills.PART: "the skills index",
                  subagent.PART: "the subagents"}


class Part(NamedTuple):
    """One part of the request. A named tuple rather than a frozen dataclass: an inspection
    makes one per message, and a frozen dataclass's constructor cost twice as much. Compare
    parts by their fields, not whole: ``sent`` and ``unreplaced`` are new callables each time."""

    id: str
    kind: PartKind  # a repair part (``repair:<n>``) is a message
    label: str
    preview: str
    tokens: int
    included: bool
    override: context.Action | None = None
    stale: bool = False  # an override whose part is not in the request (a placeholder entry)
    paired_with: tuple[str, ...] = ()
    cached_prefix: bool = False  # before the prompt cache's breakpoint: editing it costs a miss
    summarized: bool = False  # a message the compacted call's summary stands for (not sent)
    counted: Counted = "tokenizer"  # how ``tokens`` was counted (harness.tokens.Counted)
    # The whole part as the next call sends it (the replacement, if any), and as it was before
    # a replace override: rendered when asked for (``?full=``), not for every part of a snapshot.
    sent: Callable[[], str] = str
    unreplaced: Callable[[], str] | None = None

    def __repr__(self) -> str:  # never the content: a repr lands in logs and failure output
        return (f"Part(id={self.id!r}, tokens={self.tokens}, included={self.included}, "
                f"override={self.override!r}, stale={self.stale})")

    @property
    def content(self) -> str:
        return self.sent()

    @property
    def original(self) -> str | None:
        return None if self.unreplaced is None else self.unreplaced()


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


def assemble(loop: Loop, state: State, extra: Sequence[Override] = (), *,
             stored: bool = True) -> Assembled:
    """The next request without and with the run's overrides (``extra`` on top of the stored
    ones; ``extra`` alone when not ``stored``: a set previewed in place of the saved one), after
    ``before_run`` as a run starting or resuming from ``state`` does it, and after the batch it
    paused in, if any, finishes."""
    loop.chain.before_run(state)
    batch = _finish_paused(loop, state)
    overrides = (context.active(state) if stored else context.NONE).merged(extra)
    if not overrides:  # nothing to take out: the request sent is the whole request
        context.set_active(state, overrides)
        after = _capture(loop, state)
        return Assembled(after, after, overrides, batch)
    context.set_active(state, context.NONE)
    before = _capture(loop, state)
    context.set_active(state, overrides)
    after = _capture(loop, state)  # last: the batch's reports describe the request sent
    return Assembled(before, after, overrides, batch)


def _finish_paused(loop: Loop, state: State) -> tuple[ForeseenCall, ...]:
    """A run paused for approval makes its next call once the batch finishes: ``state`` as
    :meth:`Loop.finish_batch` leaves it, the results message in the history with the seq it
    will be stored with, each result not known before the batch runs left empty (what is known
    of each call is returned). A batch that does not match the history finishes nothing: the
    run fails instead of calling the model."""
    batch = state.pending_batch
    calls = state.messages[-1].tool_uses if state.messages else ()
    if batch is None or approvals.waiting_calls(batch, calls) is None:
        return ()
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
    return foreseen


def left_out(before: ModelRequest, after: ModelRequest) -> list[str]:
    """The parts of ``before`` that ``after`` does not send (excluded, or taken along as a
    pair), in request order."""
    sent = set(context.part_ids(after.system, after.tools, after.request.messages))
    every = context.part_ids(before.system, before.tools, before.request.messages)
    return [p for p in every if p not in sent]


def inspect(loop: Loop, state: State, tokenizer: Tokenizer, *, extra: Sequence[Override] = (),
            stored: bool = True, provider_count: bool = False) -> Snapshot:
    """The snapshot of the request the next call of ``state``'s session would send (with
    ``extra`` in place of the stored overrides when not ``stored``)."""
    started = time.perf_counter()
    with telemetry.span(telemetry.SPAN_CONTEXT_INSPECT) as span:
        assembled = assemble(loop, state, extra, stored=stored)
        snapshot = _snapshot(assembled, state, tokenizer, as_sent=_wire_form(loop),
                             counter=loop.provider if provider_count else None)
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
    is marked in its content, with no flag (:mod:`harness.providers.openai_wire`)."""
    if split_model(loop.agent.model)[0] != openai_wire.PROVIDER:
        return _as_is
    return lambda message: replace(message, content=tuple(
        openai_wire.as_sent(b) for b in message.content)) if message.tool_results else message


def _as_is(message: Message) -> Message:
    return message


def _snapshot(assembled: Assembled, state: State, tokenizer: Tokenizer, *,
              as_sent: Callable[[Message], Message], counter: object) -> Snapshot:
    before, after, overrides, batch = assembled
    cache = prompt_cache.report(state)
    breakpoint = cache.breakpoint if cache is not None else None
    report = summarization.report(state)
    system = _system_parts(before.system, after.system, overrides, tokenizer, breakpoint)
    tools = _tool_parts(before.tools, after.tools, tokenizer, cached=breakpoint is not None)
    batch_seq = state.messages[-1].seq if batch else None
    messages = _message_parts(state.messages, after.request.messages, overrides, tokenizer,
                              as_sent, batch=batch, batch_seq=batch_seq, compaction=report)
    present = {p.id for p in (*system, *tools, *messages)}
    # The summary is a part exactly when the call is compacted: an override of it is stale
    # otherwise, like any override whose part is not in the request.
    stale = tuple(o.part for o in overrides.overrides if o.part not in present)
    placeholders = {group: tuple(_stale_part(o, tokenizer.source) for o in overrides.overrides
                                 if o.part in stale and _group(o.part) == group)
                    for group in ("system", "tool", "message")}
    sent, unfiltered = after.to_provider_request(), before.to_provider_request()
    parts_after = sum(p.tokens for p in (*system, *tools, *messages) if p.included)
    counted: Counted = tokenizer.source
    # The tokenizer's request() is its parts plus its framing: summed here from the parts
    # already counted, so a 10,000-message history is not counted over again.
    total_after = parts_after + tokenizer.framing(sent)
    total_before = total_after if before is after else tokenizer.request(unfiltered)
    if isinstance(counter, TokenCounter):
        try:
            total_after = counter.count_tokens(sent)
            total_before = total_after if before is after else counter.count_tokens(unfiltered)
            counted = "provider"
        except ProviderError:
            pass  # advisory: an unreachable counter leaves the tokenizer's totals
    return Snapshot(
        system=system + placeholders["system"], tools=tools + placeholders["tool"],
        messages=messages + placeholders["message"],
        total_before=total_before, total_after=total_after, framing=total_after - parts_after,
        framing_counted=tokenizer.framing_source if counted != "provider" else "provider",
        counted=counted, would_compact=bool(report and report.would_compact),
        cache_breakpoint=breakpoint,
        cache_prefix_tokens=cache.prefix_tokens if cache is not None else None,
        cache_minimum=cache.minimum if cache is not None else None,
        overrides_active=len(overrides) - len(stale), stale=stale, request=after,
        batch=batch, batch_part=message_part(batch_seq) if batch_seq is not None else None,
        compaction=report)


def _group(part: str) -> str:
    """The snapshot group a part is listed in (the summary goes with the messages)."""
    kind = part_kind(part)
    return "message" if kind in ("message", "summary", None) else kind


def _stale_part(override: Override, counted: Counted) -> Part:
    return Part(id=override.part, kind=part_kind(override.part) or "message", counted=counted,
                label="(not in the request)", preview="", tokens=0, included=False,
                override=override.action, stale=True)


def preview(text: str) -> str:
    """The first 200 characters, whitespace folded, on a character boundary (a str is always
    cut on one)."""
    text = " ".join(text[:4 * PREVIEW_CHARS].split())
    return text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS - 1] + "…"


def _system_parts(before: Sequence[SourcedBlock], after: Sequence[SourcedBlock],
                  overrides: OverrideSet, tokenizer: Tokenizer,
                  breakpoint: int | None) -> tuple[Part, ...]:
    sent = {b.part: (i, b) for i, b in enumerate(after)}
    parts = []
    for block in before:
        override = overrides.get(block.part)
        index, shown = sent.get(block.part, (None, block))
        parts.append(Part(
            id=block.part, kind="system", label=_system_label(block.part),
            preview=preview(shown.block.text), tokens=tokenizer.block(shown.block),
            included=index is not None, override=override.action if override else None,
            cached_prefix=index is not None and breakpoint is not None and index <= breakpoint,
            counted=tokenizer.source, sent=_text_of(shown.block),
            unreplaced=_text_of(block.block) if override and override.action == "replace"
            else None))
    return tuple(parts)


def _system_label(part: str) -> str:
    if part.startswith(memory.PART_PREFIX):
        return "memory " + part.removeprefix(memory.PART_PREFIX)
    return _SYSTEM_LABELS.get(part, part.removeprefix("system:"))


def _tool_parts(before: Iterable[Tool], after: Iterable[Tool], tokenizer: Tokenizer, *,
                cached: bool) -> tuple[Part, ...]:
    sent = {t.name for t in after}
    parts = []
    for tool in before:
        definition = tool.definition
        included = tool.name in sent
        parts.append(Part(
            id=context.tool_part(tool.name), kind="tool", label=tool.name,
            preview=preview(definition.description), tokens=tokenizer.tool(definition),
            included=included, override=None if included else "exclude",
            cached_prefix=included and cached, counted=tokenizer.tool_source,
            sent=partial(_tool_json, definition)))
    return tuple(parts)


def _message_parts(working: Sequence[Message], after: Sequence[Message], overrides: OverrideSet,
                   tokenizer: Tokenizer, as_sent: Callable[[Message], Message], *,
                   batch: Sequence[ForeseenCall] = (), batch_seq: int | None = None,
                   compaction: summarization.SummarizationReport | None = None,
                   ) -> tuple[Part, ...]:
    """The parts of the ``working`` history (as the chain received it: repairs, a paused batch's
    results in), each sent as ``after`` has it, counted as the tokenizer counts them (which
    knows its family's wire) and shown as the adapter sends them (``as_sent``); the message
    ``batch_seq``, if any, is the results of a paused ``batch``, not stored yet. When the call
    would be compacted (``compaction``), the summary comes first, and the messages it stands
    for are not sent."""
    sent = {m.seq: m for m in after if m.seq is not None}
    repairs = {id(m) for m in after if m.seq is None}
    partners = context.pairs(working)
    summarized = range(0)
    parts: list[Part] = []
    if compaction is not None and compaction.summarized:
        summary = next((m for m in after if is_summary(m)), None)
        parts.append(_summary_part(summary, compaction, overrides, tokenizer))
        if compaction.summary_from_seq is not None and compaction.summary_through_seq:
            summarized = range(compaction.summary_from_seq, compaction.summary_through_seq + 1)
    repair_no, last = 0, len(working) - 1
    for index, message in enumerate(working):
        if message.seq is None:  # made up for this request: the repair of an interrupted call
            repair_no += 1
            shown, part_id = message, f"{context.REPAIR_PREFIX}{repair_no}"
            included = id(message) in repairs
            override = None
            label = "added for this request (an interrupted call's result)" + (
                "; a message posted next is sent with it, in the same user message"
                if index == last else "")
        else:
            part_id = message_part(message.seq)
            included = message.seq in sent
            shown = sent.get(message.seq, message)
            override = overrides.get(part_id)
            label = f"#{message.seq} {message.role}"
            if message.seq == batch_seq:
                label += f": {_batch_label(batch)}"
        # Summarized: the summary stands for it — a replaced one's replacement summarized.
        stood_for = (not included and message.seq in summarized
                     and (override is None or override.action == "replace"))
        if stood_for:
            label += " (summarized)"
        wire = as_sent(shown)
        parts.append(Part(
            id=part_id, kind="message", label=label,
            preview=preview(_batch_text(shown, batch) if message.seq == batch_seq
                            else _message_text(wire)),
            tokens=tokenizer.message(shown),
            included=included, override=override.action if override else None,
            summarized=stood_for,
            paired_with=tuple(partners.get(part_id, ())), counted=tokenizer.source,
            sent=partial(content_json, wire),
            unreplaced=partial(content_json, as_sent(message))
            if override and override.action == "replace" else None))
    return tuple(parts)


def _summary_part(summary: Message | None, report: summarization.SummarizationReport,
                  overrides: OverrideSet, tokenizer: Tokenizer) -> Part:
    """The summary the compacted call opens with: the stored one reused, or one the call
    makes first (its text not known yet: sent empty here, up to its token budget)."""
    override = overrides.get(context.SUMMARY)
    span = f"#{report.summary_from_seq}–#{report.summary_through_seq}"
    if override is not None and override.action == "replace":
        how = "replaced by an override"
    elif report.summary_pending:
        how = (f"{report.summary_outcome} when the call is sent, up to "
               f"{report.summary_max_tokens:,} tokens: its text is not known yet")
    else:
        how = "the stored summary, sent as it is"
    shown = summary if summary is not None else history.summary_message("")
    return Part(
        id=context.SUMMARY, kind="summary", label=f"the summary of {span} ({how})",
        preview=preview(shown.text), tokens=tokenizer.message(shown) if summary else 0,
        included=summary is not None, override=override.action if override else None,
        counted=tokenizer.source, sent=partial(content_json, shown))


_OUTLOOK_NOTES = {"will_run": "runs when the batch finishes", "awaiting_decision":
                  "waiting for a decision", "offloaded": "goes to a file when the batch finishes"}


def _batch_label(batch: Sequence[ForeseenCall]) -> str:
    unknown = sum(c.outlook not in approvals.KNOWN for c in batch)
    known = f"{unknown} of {len(batch)} not known yet" if unknown else "all known"
    return f"the paused batch's results, stored when it finishes ({known})"


def _batch_text(message: Message, batch: Sequence[ForeseenCall]) -> str:
    """A paused batch's results for a preview: each call's result, or why it is not known."""
    results = {b.tool_use_id: b.content for b in message.tool_results}
    return " ".join(f"{c.name} → {results.get(c.tool_use_id, '')}"
                    if c.outlook in approvals.KNOWN else f"{c.name} → ({_OUTLOOK_NOTES[c.outlook]})"
                    for c in batch)


def _message_text(message: Message) -> str:
    """What a message says, for a preview: its text, its tool calls and results — as far as
    a preview shows."""
    pieces, length = [], 0
    for block in message.content:
        if isinstance(block, TextBlock):
            piece = block.text
        elif isinstance(block, ToolUseBlock):
            piece = f"{block.name}({json_text(block.input)})"
        else:
            piece = f"→ {block.content}"
        pieces.append(piece)
        length += len(piece)
        if length > 4 * PREVIEW_CHARS:
            break
    return " ".join(pieces)


def _text_of(block: TextBlock) -> Callable[[], str]:
    return lambda: block.text


def _tool_json(definition: ToolDef) -> str:
    return json_text({"name": definition.name, "description": definition.description,
                      "input_schema": definition.input_schema})


def content_json(message: Message) -> str:
    return json_text(content_to_json(message.content))
