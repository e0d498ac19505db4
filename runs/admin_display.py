"""What the admin shows of sessions, for people to read rather than parse: a session's messages
as a transcript.

Every function renders a template, whose autoescaping is what keeps message text and tool
arguments (the users' and the model's, never trusted as HTML) inert. Each makes at most one
query, so a session of thousands of messages costs what one page of them does.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, assert_never

from django.db.models import Count, Window
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.safestring import SafeString

from harness.errors import InvalidContent
from harness.messages import Block, TextBlock, ToolResultBlock, ToolUseBlock
from harness.serde import content_from_json
from runs.models import Message, Session

# A text of more lines or characters than these is folded: its first PREVIEW_LINES lines (at
# most PREVIEW_CHARS characters) show, the rest opens on a click.
FOLD_LINES = 20
FOLD_CHARS = 2_000
PREVIEW_LINES = 8
PREVIEW_CHARS = 800
# How many of a session's messages a page shows: the last ones. The message list has them all.
MESSAGES_SHOWN = 200


def pretty_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


@dataclass(frozen=True, kw_only=True)
class Folded:
    """A text cut for display: ``head`` always shows, ``rest`` (unless empty) on a click."""

    head: str
    rest: str = ""
    more: str = ""  # what the fold hides, in words: "40 more lines"


def fold(text: str) -> Folded:
    lines = text.split("\n")
    if len(lines) <= FOLD_LINES and len(text) <= FOLD_CHARS:
        return Folded(head=text)
    head = "\n".join(lines[:PREVIEW_LINES])[:PREVIEW_CHARS]
    rest = text[len(head):].removeprefix("\n")
    hidden = rest.count("\n") + 1
    more = f"{hidden:,} more lines" if hidden > 1 else f"{len(rest):,} more characters"
    return Folded(head=head, rest=rest, more=more)


# -- a session's transcript -------------------------------------------------------------------

@dataclass(frozen=True, kw_only=True)
class ShownBlock:
    kind: Literal["text", "tool_use", "tool_result", "unreadable"]
    body: Folded
    tool: str = ""  # the tool called, or answered (when the transcript shows its call)
    is_error: bool = False

    @property
    def mono(self) -> bool:
        """Tool arguments and results are code more often than prose."""
        return self.kind != "text"


@dataclass(frozen=True, kw_only=True)
class ShownMessage:
    seq: int
    role: str
    created_at: datetime
    url: str  # the message's own admin page, with its content as stored
    blocks: tuple[ShownBlock, ...]


def _block(block: Block, tools: dict[str, str]) -> ShownBlock:
    match block:
        case TextBlock():
            return ShownBlock(kind="text", body=fold(block.text))
        case ToolUseBlock():
            tools[block.id] = block.name
            return ShownBlock(kind="tool_use", tool=block.name,
                              body=fold(pretty_json(block.input)))
        case ToolResultBlock():
            return ShownBlock(kind="tool_result", tool=tools.get(block.tool_use_id, ""),
                              is_error=block.is_error, body=fold(block.content))
        case _:
            assert_never(block)


def _message(message: Message, tools: dict[str, str]) -> ShownMessage:
    """``tools`` names the tool of each call shown so far, for the results that answer them."""
    try:
        blocks = tuple(_block(b, tools) for b in content_from_json(message.content))
    except InvalidContent:  # not the API's shape (written by hand?): shown as stored
        blocks = (ShownBlock(kind="unreadable", body=fold(pretty_json(message.content))),)
    return ShownMessage(seq=message.seq, role=message.role, created_at=message.created_at,
                        url=reverse("admin:runs_message_change", args=[message.pk]),
                        blocks=blocks)


def _render_messages(messages: Iterable[Message], *, total: int, all_url: str = "") -> SafeString:
    tools: dict[str, str] = {}
    shown = [_message(m, tools) for m in messages]
    return render_to_string("runs/admin/transcript.html",
                            {"messages": shown, "total": total, "all_url": all_url})


def transcript(session: Session) -> SafeString:
    """The session's last MESSAGES_SHOWN messages in seq order, and how many there are."""
    rows = list(session.messages.annotate(total=Window(Count("id")))
                .order_by("-seq")[:MESSAGES_SHOWN])
    rows.reverse()
    all_url = f"{reverse('admin:runs_message_changelist')}?session={session.pk}"
    return _render_messages(rows, total=rows[0].total if rows else 0, all_url=all_url)


def one_message(message: Message) -> SafeString:
    return _render_messages([message], total=1)
