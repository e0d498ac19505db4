"""The context inspector's part ids and override sets, as ``hango context`` edits them.

An override set is saved whole (a PUT replaces it), so excluding or including a part is a read,
an edit here, and a write. Agent-level parts (``system:*``, ``tool:*``) go to the agent's set,
message parts (``message:<seq>``, ``summary``) to the session's. The server checks the set
again (pairs, a valid history); this module only keeps a typo from reaching it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

Target = Literal["agent", "session"]
Action = Literal["exclude", "replace"]

SUMMARY = "summary"
_AGENT_PREFIXES = ("system:", "tool:")
MESSAGE_PREFIX = "message:"
PART_SYNTAX = "system:<name>, tool:<name>, message:<seq> or summary"


def part_target(part: str) -> Target:
    """Whose override set ``part`` belongs to; ValueError, saying why, when it names no part."""
    if part == SUMMARY:
        return "session"
    if part.startswith(_AGENT_PREFIXES):
        if part.partition(":")[2]:
            return "agent"
    elif part.startswith(MESSAGE_PREFIX):
        seq = part.removeprefix(MESSAGE_PREFIX)
        if seq.isascii() and seq.isdigit() and not seq.startswith("0"):
            return "session"
    elif part.startswith("repair:"):
        raise ValueError(f"{part!r} is a message made up for one request: it cannot be "
                         "overridden.")
    raise ValueError(f"{part!r} is not a part id: use {PART_SYNTAX}.")


@dataclass(frozen=True, kw_only=True)
class Override:
    part: str
    action: Action
    replacement: str | None = None  # the text sent instead of the part's (replace only)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Override:
        return cls(part=data["part"], action=data["action"], replacement=data.get("replacement"))

    def to_json(self) -> dict[str, Any]:
        return {"part": self.part, "action": self.action, "replacement": self.replacement}


@dataclass(frozen=True, kw_only=True)
class Edit:
    """An override set after an edit, whether it differs from before, and what to tell."""

    overrides: tuple[Override, ...]
    changed: bool
    notes: tuple[str, ...] = field(default=())


def excluding(current: Sequence[Override], parts: Iterable[str]) -> Edit:
    """``current`` with an exclude override for each of ``parts``; other overrides untouched."""
    result = list(current)
    notes = []
    for part in dict.fromkeys(parts):
        at = next((i for i, o in enumerate(result) if o.part == part), None)
        if at is None:
            result.append(Override(part=part, action="exclude"))
        elif result[at].action == "replace":
            result[at] = Override(part=part, action="exclude")
            notes.append(f"{part} was replaced: now it is excluded (its replacement is dropped).")
        else:
            notes.append(f"{part} was already excluded.")
    return Edit(overrides=tuple(result), changed=result != list(current), notes=tuple(notes))


def including(current: Sequence[Override], parts: Iterable[str],
              partners: Mapping[str, Sequence[str]] | None = None) -> Edit:
    """``current`` without the overrides of ``parts``, nor of the messages each is sent with
    (``partners``: the snapshot's ``paired_with``), which the server would exclude again."""
    by_part = {o.part: o for o in current}
    notes = []
    dropped: dict[str, None] = {}
    pending = list(dict.fromkeys(parts))
    asked = set(pending)
    while pending:
        part = pending.pop(0)
        if part in dropped:
            continue
        override = by_part.get(part)
        if override is None:
            if part in asked:
                notes.append(f"{part} had no override: it is sent as it is.")
            continue
        dropped[part] = None
        if override.action == "replace":
            notes.append(f"{part} was replaced: its replace override is removed, so its "
                         "original text is sent again.")
        elif part not in asked:
            notes.append(f"{part} is included too: it is sent with the message it pairs with.")
        pending.extend((partners or {}).get(part, ()))
    result = tuple(o for o in current if o.part not in dropped)
    return Edit(overrides=result, changed=bool(dropped), notes=tuple(notes))
