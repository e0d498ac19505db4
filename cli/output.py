"""How the ``hango`` command prints: rich tables and records, raw JSON, error reports.

Every cell is the API's data wrapped in ``Text``, so it is never read as rich markup. The
context inspector's own output is in :mod:`cli.context_output`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from datetime import datetime
from typing import Any

import click
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from cli.client import ApiError, CliError

# (header, how to show a row's cell)
Column = tuple[str, Callable[[dict[str, Any]], str]]


def time_text(value: Any) -> str:
    """An API time as the tables show it: ``YYYY-MM-DD HH:MM`` (UTC)."""
    try:
        return datetime.fromisoformat(value).strftime("%Y-%m-%d %H:%M")
    except (TypeError, ValueError):
        return cell_text(value)


def cell_text(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def clip(text: str, limit: int = 200) -> str:
    """``text`` cut to ``limit`` characters, an ellipsis marking the cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def content_text(blocks: Any) -> str:
    """A message's blocks as text: tool calls and results in one clipped line each."""
    if not isinstance(blocks, list):
        return cell_text(blocks)
    lines = []
    for block in blocks:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            lines.append(block.get("text", ""))
        elif kind == "tool_use":
            lines.append(clip(f"→ {block.get('name')} {cell_text(block.get('input'))}"))
        elif kind == "tool_result":
            mark = "← error" if block.get("is_error") else "←"
            lines.append(clip(f"{mark} {cell_text(block.get('content'))}"))
        else:
            lines.append(clip(cell_text(block)))
    return "\n".join(lines)


AGENT_COLUMNS: list[Column] = [
    ("id", lambda r: r["id"]), ("name", lambda r: r["name"]), ("model", lambda r: r["model"]),
    ("created (UTC)", lambda r: time_text(r.get("created_at"))),
]
SESSION_COLUMNS: list[Column] = [
    ("id", lambda r: r["id"]), ("agent", lambda r: r["agent"]), ("title", lambda r: r["title"]),
    ("active run", lambda r: cell_text(r.get("active_run"))),
    ("created (UTC)", lambda r: time_text(r.get("created_at"))),
]
MESSAGE_COLUMNS: list[Column] = [
    ("seq", lambda r: str(r["seq"])), ("role", lambda r: r["role"]),
    ("content", lambda r: content_text(r.get("content"))),
    ("created (UTC)", lambda r: time_text(r.get("created_at"))),
]



def _todos_done(run: dict[str, Any]) -> str:
    todos = run.get("todos") or []
    done = sum(1 for t in todos if t.get("status") == "completed")
    return f"{done}/{len(todos)}" if todos else "-"


RUN_COLUMNS: list[Column] = [
    ("id", lambda r: r["id"]), ("status", lambda r: r["status"]),
    ("turn", lambda r: str(r["turn"])), ("todos done", _todos_done),
    ("created (UTC)", lambda r: time_text(r.get("created_at"))),
    ("finished (UTC)", lambda r: time_text(r.get("finished_at"))),
]


def terminal() -> Console:
    """A console at the terminal's width; piped output, with no COLUMNS set, gets one line per
    row."""
    console = Console()
    if not console.is_terminal and not os.environ.get("COLUMNS"):
        console = Console(width=200)
    return console


def print_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False))


def print_table(rows: list[dict[str, Any]], columns: list[Column]) -> None:
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, header_style="bold")
    for header, _ in columns:
        # fold, not ellipsis: a narrow terminal wraps an id but never cuts it.
        table.add_column(header, overflow="fold")
    for row in rows:
        table.add_row(*(Text(show(row)) for _, show in columns))
    terminal().print(table)


def print_record(record: dict[str, Any]) -> None:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column(overflow="fold")
    for name, value in record.items():
        text = content_text(value) if name == "content" else cell_text(value)
        grid.add_row(Text(name), Text(text))
    terminal().print(grid)


def usage_text(usage: dict[str, Any]) -> str:
    return ", ".join(f"{count} {name.removesuffix('_tokens').replace('_', ' ')}"
                     for name, count in usage.items() if count) or "none"


def totals_cost_text(cost: dict[str, Any]) -> str:
    """Totals' cost per currency (never added across currencies) and the calls unpriced."""
    amounts = " + ".join(f"{line['total']} {line['currency']}" for line in cost["by_currency"])
    unpriced = f"{cost['unpriced_calls']:,} calls unpriced" if cost["unpriced_calls"] else ""
    return " · ".join(part for part in (amounts or "nothing priced", unpriced) if part)


def print_run(run: dict[str, Any]) -> None:
    """A run: its fields, then its todo list and the tool calls waiting for a decision."""
    error = run.get("error")
    rows = [
        ("id", run["id"]), ("session", run["session"]), ("agent", run["agent"]),
        ("status", run["status"] + (" (cancel requested)" if run.get("cancel_requested")
                                    and run["status"] == "running" else "")),
        ("turn", str(run["turn"])),
        ("error", f"{error.get('code')}: {error.get('message')}" if error else "-"),
        ("usage", usage_text(run.get("usage") or {}) + " tokens"),
        *((("cost", totals_cost_text(run["cost"])),) if run.get("cost") else ()),
        *((when, cell_text(run.get(f"{when}_at"))) for when in ("created", "started", "finished")),
    ]
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column(overflow="fold")
    for name, value in rows:
        grid.add_row(Text(name), Text(value))
    for i, todo in enumerate(run.get("todos") or []):
        grid.add_row(Text("todos" if i == 0 else ""),
                     Text(f"[{'x' if todo.get('status') == 'completed' else ' '}] "
                          f"{todo.get('content')} ({todo.get('status')})"))
    for i, call in enumerate(run.get("pending_approvals") or []):
        grid.add_row(Text("awaiting" if i == 0 else ""), Text(
            f"{call['tool_use_id']}: {call['name']} {cell_text(call.get('input'))} "
            f"(decide: {', '.join(call.get('allowed_decisions') or [])})"))
    action = run.get("required_action") or {}
    for i, call in enumerate(action.get("tool_calls") or []):
        grid.add_row(Text("requires" if i == 0 else ""), Text(
            f"{call['tool_use_id']}: {call['name']} {cell_text(call.get('input'))} "
            f"(the caller's result; expires {cell_text(action.get('expires_at'))})"))
    terminal().print(grid)


def _problem_lines(name: str, problem: Any) -> list[str]:
    """A validation detail entry as lines: DRF sends a field's problems as a list of sentences,
    a nested serializer's as a dict (or a list of dicts) of those."""
    if isinstance(problem, dict):
        return [line for key, value in problem.items()
                for line in _problem_lines(f"{name}.{key}", value)]
    if isinstance(problem, list) and all(isinstance(item, str) for item in problem):
        return [f"{name}: {item}" for item in problem]
    if isinstance(problem, list) and all(isinstance(item, dict) for item in problem):
        return [line for i, item in enumerate(problem) for line in _problem_lines(f"{name}[{i}]",
                                                                               item)]
    return [f"{name}: {cell_text(problem)}"]


def report_error(exc: CliError) -> None:
    """The error line (``error <status> <code>: <message>`` for the API's), details, a hint."""
    click.echo(str(exc), err=True)
    if isinstance(exc, ApiError) and isinstance(exc.detail, dict):
        for name, problem in exc.detail.items():
            for line in _problem_lines(name, problem):
                click.echo(f"  {line}", err=True)
    if exc.hint:
        click.echo(exc.hint, err=True)
