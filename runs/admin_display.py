"""What the admin shows of sessions and runs, for people to read rather than parse: a session's
messages as a transcript; a run's todos, usage and events.

Every function renders a template, whose autoescaping is what keeps message text, tool arguments
and event data (the users' and the model's, never trusted as HTML) inert. Each makes at most one
query, so a session of thousands of messages costs what one page of them does.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, assert_never

from django.contrib import admin
from django.db.models import Count, QuerySet, Sum, Window
from django.http import HttpRequest
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.safestring import SafeString

from harness import approvals, tool_calls
from harness.errors import InvalidContent
from harness.messages import Block, TextBlock, ToolResultBlock, ToolUseBlock
from harness.middleware import todo
from harness.serde import content_from_json, json_text
from harness.state import todo_from_json
from runs.execution import events
from runs.intake.selectors import run_calls
from runs.models import Message, Run, RunEvent, Session, SessionKind

# A text of more lines or characters than these is folded: its first PREVIEW_LINES lines (at
# most PREVIEW_CHARS characters) show, the rest opens on a click.
FOLD_LINES = 20
FOLD_CHARS = 2_000
PREVIEW_LINES = 8
PREVIEW_CHARS = 800
# How many of a session's messages, and of a run's events, a page shows: the last ones. Their
# own admin lists have them all.
MESSAGES_SHOWN = 200
EVENTS_SHOWN = 200
SUMMARY_CHARS = 120  # an event of a type not known here is summarised by its data, cut to this


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


# -- a run ------------------------------------------------------------------------------------

def todo_list(run: Run) -> SafeString:
    try:
        todos = [todo_from_json(t) for t in run.state_json.get("todos", [])]
    except (InvalidContent, AttributeError, TypeError):  # not a checkpoint's shape: as stored
        return render_to_string("runs/admin/raw.html", {"text": fold(pretty_json(run.state_json))})
    done = sum(t.status == "completed" for t in todos)
    rows = [(t.status, t.status.replace("_", " "), t.content) for t in todos]
    return render_to_string("runs/admin/todos.html", {"todos": rows, "done": done})


@dataclass(frozen=True, kw_only=True)
class UsageRow:
    label: str
    calls: int
    counts: tuple[str, ...]  # input, output, cache read, cache write and their total, formatted


def _usage_row(label: str, calls: int, *counts: int) -> UsageRow:
    return UsageRow(label=label, calls=calls,
                    counts=tuple(f"{n:,}" for n in (*counts, sum(counts))))


def usage(run: Run) -> SafeString:
    """The run's tokens, and its model calls by purpose and model. No price is shown: hango
    knows none of its models' prices."""
    # The ledger has no run index: its (tenant, created_at) index finds the run's rows.
    groups = (run.usage_records.filter(tenant_id=run.session.tenant_id,
                                       created_at__gte=run.created_at)
              .values("purpose", "provider", "model")
              .annotate(calls=Count("id"), input=Sum("input_tokens"), output=Sum("output_tokens"),
                        cache_read=Sum("cache_read_tokens"),
                        cache_write=Sum("cache_write_tokens"))
              .order_by("purpose", "provider", "model"))
    rows = [_usage_row(f"{g['purpose']} · {g['provider']}:{g['model']}", g["calls"],
                       g["input"], g["output"], g["cache_read"], g["cache_write"])
            for g in groups]
    total = _usage_row("the run", sum(r.calls for r in rows), run.input_tokens, run.output_tokens,
                       run.cache_read_tokens, run.cache_write_tokens)
    return render_to_string("runs/admin/usage.html", {"rows": rows, "total": total})


def cache_calls(run: Run) -> SafeString:
    """Each of the run's own model calls: the share of its input the provider read from its
    cache, as it reported it, next to the cached prefix the inspector predicted when it was
    sent (the tokens of its parts before the cache mark)."""
    calls = [call.cache_json() for call in run_calls(run.pk, tenant_id=run.session.tenant_id,
                                                     since=run.created_at)]
    for call in calls:
        ratio = call["cache_read_ratio"]
        call["percent"] = None if ratio is None else f"{ratio:.0%}"
    return render_to_string("runs/admin/cache_calls.html", {"calls": calls})


def _summary(event_type: str, data: Any) -> str:
    match event_type:
        case events.EVENT_STATUS:
            line = f"{data['status']} at turn {data['turn']}"
            error = data.get("error")
            return f"{line}: {error['code']}: {error['message']}" if error else line
        case events.EVENT_MESSAGE:
            return f"message #{data['seq']} ({data['role']})"
        case tool_calls.EVENT_TOOL_RESULT:
            return f"{data['name']}: {'error' if data['is_error'] else 'ok'}"
        case todo.EVENT_UPDATED:
            todos = data["todos"]
            done = sum(t["status"] == "completed" for t in todos)
            return f"todos: {done} of {len(todos)} completed"
        case approvals.EVENT_REQUESTED:
            return "waiting for a decision on " + ", ".join(p["name"] for p in data["pending"])
    text = json_text(data)
    return text if len(text) <= SUMMARY_CHARS else text[:SUMMARY_CHARS - 1] + "…"


def event_summary(event: RunEvent) -> str:
    """One line saying what the event says."""
    try:
        return _summary(event.type, event.data)
    except (KeyError, TypeError, AttributeError):  # not the shape its type has: as stored
        return _summary("", event.data)


@dataclass(frozen=True, kw_only=True)
class ShownEvent:
    seq: int
    type: str
    created_at: datetime
    summary: str
    data: str


def shown_events(events: Iterable[RunEvent]) -> list[ShownEvent]:
    return [ShownEvent(seq=e.seq, type=e.type, created_at=e.created_at,
                       summary=event_summary(e), data=pretty_json(e.data)) for e in events]


def event_log(run: Run) -> SafeString:
    """The run's last EVENTS_SHOWN events in seq order, each with its data on a click."""
    rows = list(run.events.annotate(total=Window(Count("seq"))).order_by("-seq")[:EVENTS_SHOWN])
    rows.reverse()
    return render_to_string("runs/admin/events.html", {
        "events": shown_events(rows), "total": rows[0].total if rows else 0,
        "all_url": reverse("admin:runs_run_events", args=[run.pk])})


def error_line(error: Any) -> str:
    """A failed run's ``{"code", "message"}`` as one line."""
    try:
        return f"{error['code']}: {error['message']}" if error else "—"
    except (KeyError, TypeError):  # not that shape: as stored
        return json_text(error)


def checkpoint(run: Run) -> SafeString:
    """The rest of the checkpoint (each middleware's private state, a waiting approval)."""
    state = run.state_json
    rest = {k: v for k, v in state.items() if k != "todos"} if isinstance(state, dict) else state
    return render_to_string("runs/admin/raw.html", {"text": fold(pretty_json(rest))})


class SessionKindFilter(admin.SimpleListFilter):
    """The members' conversations by default; an eval's sessions only when asked for."""

    title = "kind (chats unless chosen)"
    parameter_name = "kind"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(SessionKind.EVAL.value, "eval"), ("all", "chat and eval")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        if value == "all":
            return queryset
        return queryset.filter(kind=value or SessionKind.CHAT)
