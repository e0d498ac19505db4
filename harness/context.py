"""Part ids and context overrides: what the inspector names, and what a user excludes or replaces.

Every part of an assembled model request has a stable id, the same across turns and runs:
``system:<contributor>`` (the :class:`~harness.chain.SourcedBlock` part of a system block, e.g.
``system:agent``, ``system:memory:/memories/AGENTS.md``), ``tool:<name>``, ``message:<seq>`` (a
stored message) and ``summary`` (the compaction summary). A message made up for one request
(the repair of an interrupted call) has no seq; it is shown as ``repair:<n>`` and cannot be
overridden.

An :class:`Override` excludes a part or replaces its text. Where each kind applies, so that the
part is gone before anything that depends on it is decided:

* system parts in :meth:`harness.chain.Chain.system_blocks`, before the prompt cache picks its
  breakpoint (it lands on a block that is actually sent);
* tool parts in the allowlist slot, the innermost, so nothing can re-add an excluded tool;
* message parts in ContextOverridesMiddleware, the slot right before summarization (compaction
  and the budget see the filtered history); the summary part in summarization itself, which is
  where a summary is made.

The set a run applies is loaded once, in ``before_run``, into the run's private state under
:data:`NAME` (so a later slice or a resume applies the same set: a run never sees its context
change between turns); the functions here only read it. Overrides never touch the stored
history: they shape the outgoing request, like compaction.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Literal, TypeVar, get_args

from harness.errors import InvalidContent
from harness.history import tool_pairs
from harness.messages import Block, Message, TextBlock
from harness.state import State
from harness.tools.base import Tool

T = TypeVar("T")

PartID = str
AGENT_PART: PartID = "system:agent"
NAME = "context_overrides"
SUMMARY = "summary"
SYSTEM_PREFIX = "system:"
TOOL_PREFIX = "tool:"
MESSAGE_PREFIX = "message:"
REPAIR_PREFIX = "repair:"
QUEUED_PREFIX = "queued:"  # a message waiting behind the active run (not in the request)

Action = Literal["exclude", "replace"]
ACTIONS: tuple[Action, ...] = get_args(Action)
PartKind = Literal["system", "tool", "message", "summary"]


@dataclass(frozen=True, kw_only=True)
class SourcedBlock:
    """A system block with the part id of whoever contributed it (never sent to a provider)."""

    part: PartID
    block: TextBlock


def tool_part(name: str) -> str:
    return TOOL_PREFIX + name


def message_part(seq: int) -> str:
    return f"{MESSAGE_PREFIX}{seq}"


def message_seq(part: str) -> int | None:
    """The seq a ``message:<seq>`` id names; None for any other id."""
    if not part.startswith(MESSAGE_PREFIX):
        return None
    digits = part[len(MESSAGE_PREFIX):]
    return int(digits) if digits.isascii() and digits.isdigit() and digits[0] != "0" else None


def part_kind(part: str) -> PartKind | None:
    """Which kind of part ``part`` names, or None when it names none an override can target."""
    if part == SUMMARY:
        return "summary"
    if part.startswith(SYSTEM_PREFIX) and len(part) > len(SYSTEM_PREFIX):
        return "system"
    if part.startswith(TOOL_PREFIX) and len(part) > len(TOOL_PREFIX):
        return "tool"
    if message_seq(part) is not None:
        return "message"
    return None


@dataclass(frozen=True, kw_only=True)
class Override:
    part: str
    action: Action
    replacement: str | None = None  # the new text; set exactly when the action is replace

    def __post_init__(self) -> None:
        if self.action not in ACTIONS:
            raise ValueError(f"an override's action is one of {list(ACTIONS)}")
        if (self.action == "replace") != (self.replacement is not None):
            raise ValueError("a replacement comes with a replace override, and only with one")


@dataclass(frozen=True, kw_only=True)
class OverrideSet:
    """The overrides one run applies: its agent's (system and tool parts) and its session's
    (message and summary parts). At most one per part."""

    overrides: tuple[Override, ...] = ()

    @cached_property
    def by_part(self) -> Mapping[str, Override]:
        return {o.part: o for o in self.overrides}

    @cached_property
    def kinds(self) -> frozenset[PartKind | None]:
        """The kinds of part this set overrides."""
        return frozenset(part_kind(o.part) for o in self.overrides)

    def excluded(self, kind: PartKind) -> list[str]:
        """The parts of ``kind`` this set excludes, in its order."""
        return [o.part for o in self.overrides
                if o.action == "exclude" and part_kind(o.part) == kind]

    @cached_property
    def excluded_tools(self) -> frozenset[str]:
        return frozenset(part[len(TOOL_PREFIX):] for part in self.excluded("tool"))

    def get(self, part: str) -> Override | None:
        return self.by_part.get(part)

    def __len__(self) -> int:
        return len(self.overrides)

    def merged(self, extra: Iterable[Override]) -> OverrideSet:
        """This set with ``extra`` on top (an extra override replaces one for the same part)."""
        combined = dict(self.by_part)
        combined.update((o.part, o) for o in extra)
        return OverrideSet(overrides=tuple(combined.values()))

    def to_json(self) -> dict[str, Any]:
        return {"overrides": [{"part": o.part, "action": o.action, "replacement": o.replacement}
                              for o in self.overrides]}

    @classmethod
    def from_json(cls, data: Any) -> OverrideSet:
        try:
            return cls(overrides=tuple(Override(part=o["part"], action=o["action"],
                                                replacement=o.get("replacement"))
                                       for o in data["overrides"]))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise InvalidContent(f"context overrides in the run state are malformed: {exc}") \
                from None


NONE = OverrideSet()


def active(state: State) -> OverrideSet:
    """The overrides the run applies (none when nothing loaded any). A read that records
    nothing: the chain and the allowlist ask on every call, with or without the slot."""
    value = state.private.get(NAME)
    if value is None or isinstance(value, OverrideSet):
        return value or NONE
    parsed = OverrideSet.from_json(value)
    state.private[NAME] = parsed
    return parsed


def set_active(state: State, overrides: OverrideSet) -> None:
    state.private[NAME] = overrides


@dataclass(kw_only=True)
class Applied:
    """Per-batch scratch: what the overrides took out of the request assembled last (the
    originals), for the chat span's ``hango.context.excluded_tokens``."""

    system: list[SourcedBlock] = field(default_factory=list)
    tools: list[Tool] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)  # messages excluded


def applied(state: State, *, fresh: bool = False) -> Applied:
    """The batch's record of what the overrides took out; ``fresh`` starts a new one (the
    assembly of a request starts with its system blocks)."""
    value = state.scratch.get(NAME)
    if fresh or not isinstance(value, Applied):
        value = state.scratch[NAME] = Applied()
    return value


def replace_text(message: Message, text: str) -> Message:
    """``message`` with its text replaced by ``text``: one text block where its first text
    block was, every tool block kept (so a call and its result stay paired)."""
    blocks: list[Block] = []
    placed = False
    for block in message.content:
        if isinstance(block, TextBlock):
            if not placed:
                blocks.append(TextBlock(text=text))
                placed = True
        else:
            blocks.append(block)
    if not placed:
        blocks.append(TextBlock(text=text))
    return replace(message, content=tuple(blocks))


def apply_system(blocks: Sequence[SourcedBlock],
                 overrides: OverrideSet) -> tuple[list[SourcedBlock], list[SourcedBlock]]:
    """The system blocks with the system overrides applied, and the blocks excluded."""
    return _applied(blocks, overrides, lambda sourced: sourced.part,
                    lambda sourced, text: SourcedBlock(part=sourced.part,
                                                       block=TextBlock(text=text)))


def part_ids(system: Iterable[SourcedBlock], tools: Iterable[Tool],
             messages: Iterable[Message]) -> list[str]:
    """The part ids of a request's system blocks, tools and stored messages, in request order
    (a message made up for the request has none)."""
    return ([b.part for b in system] + [tool_part(t.name) for t in tools]
            + [message_part(m.seq) for m in messages if m.seq is not None])


def apply_messages(messages: Sequence[Message],
                   overrides: OverrideSet) -> tuple[list[Message], list[Message]]:
    """The history with the message overrides applied, and the messages excluded."""
    return _applied(messages, overrides,
                    lambda m: message_part(m.seq) if m.seq is not None else None, replace_text)


def _applied(items: Sequence[T], overrides: OverrideSet, part: Callable[[T], str | None],
             replaced: Callable[[T, str], T]) -> tuple[list[T], list[T]]:
    """``items`` kept (a replaced one as ``replaced`` makes it) and excluded, by the override of
    each one's part (an item without a part id is kept)."""
    kept: list[T] = []
    excluded: list[T] = []
    for item in items:
        part_id = part(item)
        override = overrides.get(part_id) if part_id is not None else None
        if override is None:
            kept.append(item)
        elif override.action == "exclude":
            excluded.append(item)
        else:
            assert override.replacement is not None
            kept.append(replaced(item, override.replacement))
    return kept, excluded


def pairs(messages: Sequence[Message]) -> dict[str, list[str]]:
    """Each stored message's partners: the message holding a batch's calls and the one holding
    their results go together (kept or excluded as one)."""
    partners: dict[str, list[str]] = {}
    for calls, results in tool_pairs(messages):
        a, b = messages[calls].seq, messages[results].seq
        if a is not None and b is not None:
            partners.setdefault(message_part(a), []).append(message_part(b))
            partners.setdefault(message_part(b), []).append(message_part(a))
    return partners


def with_partners(excluded: Iterable[str], messages: Sequence[Message]) -> list[str]:
    """The message parts excluding ``excluded`` must also exclude, in history order: the
    partners of a call or result message that is excluded without its pair."""
    chosen = set(excluded)
    partners = pairs(messages)
    added = {p for part in chosen for p in partners.get(part, ()) if p not in chosen}
    return [message_part(m.seq) for m in messages
            if m.seq is not None and message_part(m.seq) in added]
