"""The context inspector's parts: one per system block, tool definition and message of a request,
each with its label, preview, count and how the next call sends it (:mod:`harness.inspect`
assembles the request and the snapshot around them).

A message part is built from the working history as the chain received it — repairs and a
paused batch's results in — and shows what ``after``, the request as sent, has of it: the
replacement of a replace override, nothing for an excluded one, the summary in place of the
messages a compacted call summarizes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import NamedTuple

from harness import approvals, context, history
from harness.approvals import ForeseenCall
from harness.caches import IdentityCache
from harness.context import Override, OverrideSet, PartKind, SourcedBlock, message_part, part_kind
from harness.history import is_summary
from harness.images import Listed, listed
from harness.messages import Message, TextBlock, ToolDef, ToolUseBlock
from harness.middleware import filesystem, memory, skills, subagent, summarization, todo
from harness.serde import content_to_json, json_text
from harness.tokens.base import Counted, Tokenizer
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
    counted: Counted = "tokenizer"  # how ``tokens`` was counted (harness.tokens.base.Counted)
    images: tuple[Listed, ...] = ()  # a message's tool results' images (in ``tokens``)
    # The server's chat template left it out of the prompt (harness.served_snapshot); None: not
    # known (no templated prompt was seen, or the part is not sent).
    dropped_by_template: bool | None = None
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



def group_of(part: str) -> str:
    """The snapshot group a part is listed in (the summary goes with the messages)."""
    kind = part_kind(part)
    return "message" if kind in ("message", "summary", None) else kind


def stale_part(override: Override, counted: Counted) -> Part:
    return Part(id=override.part, kind=part_kind(override.part) or "message", counted=counted,
                label="(not in the request)", preview="", tokens=0, included=False,
                override=override.action, stale=True)


def preview(text: str) -> str:
    """The first 200 characters, whitespace folded, on a character boundary (a str is always
    cut on one)."""
    text = " ".join(text[:4 * PREVIEW_CHARS].split())
    return text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS - 1] + "…"


def system_parts(before: Sequence[SourcedBlock], after: Sequence[SourcedBlock],
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


def tool_parts(before: Iterable[Tool], after: Iterable[Tool], tokenizer: Tokenizer, *,
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


def message_parts(working: Sequence[Message], after: Sequence[Message], overrides: OverrideSet,
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
    parts: list[Part] = []
    summarized = range(0)
    if compaction is not None and compaction.summarized:
        summary = next((m for m in after if is_summary(m)), None)
        parts.append(_summary_part(summary, compaction, overrides, tokenizer))
        if compaction.summary_from_seq is not None and compaction.summary_through_seq:
            summarized = range(compaction.summary_from_seq, compaction.summary_through_seq + 1)
    sending = _Sending(
        sent={m.seq: m for m in after if m.seq is not None},
        repairs={id(m) for m in after if m.seq is None}, overrides=overrides,
        partners=context.pairs(working), summarized=summarized, tokenizer=tokenizer,
        as_sent=as_sent, previews=_previews.setdefault(as_sent, IdentityCache()),
        batch=batch, batch_seq=batch_seq)
    repair_no, last = 0, len(working) - 1
    for index, message in enumerate(working):
        if message.seq is None:
            repair_no += 1
        parts.append(_message_part(message, sending, repair_no=repair_no, last=index == last))
    return tuple(parts)


class _Sending(NamedTuple):
    """What a message part is built against: how the call sends the history."""

    sent: dict[int, Message]  # the stored messages sent, by seq, as sent
    repairs: set[int]  # the ids of the made-up messages sent
    overrides: OverrideSet
    partners: dict[str, list[str]]
    summarized: range  # the seqs the compacted call's summary stands for
    tokenizer: Tokenizer
    as_sent: Callable[[Message], Message]
    previews: IdentityCache[str]
    batch: Sequence[ForeseenCall]
    batch_seq: int | None


def _message_part(message: Message, sending: _Sending, *, repair_no: int, last: bool) -> Part:
    override: Override | None = None
    if message.seq is None:  # made up for this request: the repair of an interrupted call
        shown, part_id = message, f"{context.REPAIR_PREFIX}{repair_no}"
        included = id(message) in sending.repairs
        label = "added for this request (an interrupted call's result)" + (
            "; a message posted next is sent with it, in the same user message" if last else "")
    else:
        part_id = message_part(message.seq)
        included = message.seq in sending.sent
        shown = sending.sent.get(message.seq, message)
        override = sending.overrides.get(part_id)
        label = f"#{message.seq} {message.role}"
        if message.seq == sending.batch_seq:
            label += f": {_batch_label(sending.batch)}"
    # Summarized: the summary stands for it — a replaced one's replacement summarized.
    stood_for = (not included and message.seq in sending.summarized
                 and (override is None or override.action == "replace"))
    if stood_for:
        label += " (summarized)"
    as_sent = sending.as_sent
    return Part(
        id=part_id, kind="message", label=label,
        preview=preview(_batch_text(shown, sending.batch)) if message.seq == sending.batch_seq
        else sending.previews.get(shown, lambda m: preview(message_text(as_sent(m)))),
        tokens=sending.tokenizer.message(shown),
        included=included, override=override.action if override else None,
        summarized=stood_for, paired_with=tuple(sending.partners.get(part_id, ())),
        counted=sending.tokenizer.source, sent=partial(_sent_json, as_sent, shown),
        images=listed(shown, as_sent, sending.tokenizer.image),
        unreplaced=partial(_sent_json, as_sent, message)
        if override and override.action == "replace" else None)


# Each message's preview as each wire form shows it, kept as long as the message object lives:
# an inspection of a long session takes the shared messages the last one decoded (harness
# messages are immutable; the inspector's reads never run a tool, which could change a call's
# arguments).
_previews: dict[Callable[[Message], Message], IdentityCache[str]] = {}


def _sent_json(as_sent: Callable[[Message], Message], message: Message) -> str:
    return content_json(as_sent(message))


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
                  "waiting for a decision", "offloaded": "goes to a file when the batch finishes",
                  "awaiting_result": "waiting for the caller's result"}


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


def message_text(message: Message) -> str:
    """What a message says, for a preview: its text, its tool calls and results — as far as
    a preview shows."""
    pieces, length = [], 0
    for block in message.content:
        if isinstance(block, TextBlock):
            piece = block.text
        elif isinstance(block, ToolUseBlock):
            piece = f"{block.name}({json_text(block.input)})"
        else:
            piece = f"→ {block.content}" + "".join(f" [{i.media_type} image]"
                                                   for i in block.images)
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
