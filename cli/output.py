"""How the ``hango`` command prints: rich tables and records, raw JSON, error reports.

Every cell is the API's data wrapped in ``Text``, so it is never read as rich markup.
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


def _clip(text: str, limit: int = 200) -> str:
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
            lines.append(_clip(f"→ {block.get('name')} {cell_text(block.get('input'))}"))
        elif kind == "tool_result":
            mark = "← error" if block.get("is_error") else "←"
            lines.append(_clip(f"{mark} {cell_text(block.get('content'))}"))
        else:
            lines.append(_clip(cell_text(block)))
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


def _console() -> Console:
    """The terminal's width; piped output, with no COLUMNS set, gets one line per row."""
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
    _console().print(table)


def print_record(record: dict[str, Any]) -> None:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column(overflow="fold")
    for name, value in record.items():
        text = content_text(value) if name == "content" else cell_text(value)
        grid.add_row(Text(name), Text(text))
    _console().print(grid)


def usage_text(usage: dict[str, Any]) -> str:
    return ", ".join(f"{count} {name.removesuffix('_tokens').replace('_', ' ')}"
                     for name, count in usage.items() if count) or "none"


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
    _console().print(grid)


# --- the context inspector -------------------------------------------------------------------

# Plain ASCII, so the column reads the same in any terminal and in a log.
SENT, LEFT_OUT = "[x]", "[ ]"
PART_GROUPS = ("system", "tools", "messages")
OVERRIDE_COLUMNS: list[Column] = [
    ("part", lambda o: o["part"]), ("action", lambda o: o["action"]),
    ("replacement", lambda o: _clip(cell_text(o.get("replacement")))),
]
_COUNTED = {"provider": "counted by the provider's token counter",
            "tokenizer": "counted with the {} tokenizer",
            "estimate": "estimated: no tokenizer for this model"}


_FRAMING = {"rule": " (by the provider's published rule)", "estimate": " (estimated)"}
# A part's count, where it is not its family's tokenizer over the exact text.
_PART_COUNTED = {"rule": "counted by rule", "estimate": "estimated"}


def part_notes(part: dict[str, Any], tokenizer: str = "") -> str:
    """The labels of a snapshot part: stale, replaced, its pairs, in the cached prefix."""
    notes = []
    if part["stale"]:
        notes.append("stale: not in the request")
    if part["override"] == "replace":
        notes.append("replaced")
    if part["paired_with"]:
        notes.append("paired with " + ", ".join(part["paired_with"]))
    if part.get("summarized"):
        notes.append("summarized: the summary is sent in its place")
    if part["cached_prefix"]:
        notes.append("cached")
    # Where the tokenizer counts the texts, say which parts it did not count as they are sent.
    if part.get("counted") in _PART_COUNTED and part["tokens"] and tokenizer != "estimate":
        notes.append(_PART_COUNTED[part["counted"]])
    return "; ".join(notes)


def _parts_table(parts: list[dict[str, Any]], tokenizer: str) -> Table:
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, header_style="bold")
    table.add_column("sent", no_wrap=True)
    # A narrow terminal shrinks the wrapping columns first, the preview (the widest) before all.
    table.add_column("part", no_wrap=True)
    table.add_column("label", overflow="fold")
    table.add_column("preview", max_width=60)
    table.add_column("tokens", justify="right", no_wrap=True)
    table.add_column("notes", overflow="fold")
    for part in parts:
        # The preview keeps to one line, cut with an ellipsis: --full shows the whole content.
        preview = Text(part["preview"], no_wrap=True, overflow="ellipsis")
        table.add_row(Text(SENT if part["included"] else LEFT_OUT), Text(part["id"]),
                      Text(part["label"]), preview, Text(str(part["tokens"])),
                      Text(part_notes(part, tokenizer)))
    sent = [p for p in parts if p["included"]]
    left_out = sum(p["tokens"] for p in parts if not p["included"])
    table.add_section()
    table.add_row(Text(""), Text("total", style="bold"),
                  Text(f"{len(sent)} of {len(parts)} sent"), Text(""),
                  Text(str(sum(p["tokens"] for p in sent)), style="bold"),
                  Text(f"{left_out} tokens left out" if left_out else ""))
    return table


def print_snapshot(snapshot: dict[str, Any]) -> None:
    """The inspector's snapshot: a table per group, then framing, totals and notices."""
    console = _console()
    for group in PART_GROUPS:
        parts = snapshot[group]
        console.print(Text(group, style="bold"))
        console.print(_parts_table(parts, snapshot["tokenizer"]) if parts else Text("  (none)"))
    totals, overrides = snapshot["totals"], snapshot["overrides"]
    counted = _COUNTED.get(snapshot["counted"], snapshot["counted"]).format(snapshot["tokenizer"])
    rows = _run_rows(snapshot) + [
        ("framing", f"{snapshot['framing']} tokens the provider adds around the parts"
                    + _FRAMING.get(snapshot.get("framing_counted", ""), "")),
        ("total", f"{totals['after']} tokens sent, {totals['before']} without the overrides; "
                  + counted),
        ("overrides", f"{overrides['active']} active" + (
            "; stale (kept, doing nothing until the part returns): "
            + ", ".join(overrides["stale"]) if overrides["stale"] else "")),
    ]
    if snapshot["cache_breakpoint"] is not None:
        rows.append(("cache", "the parts marked cached are the prompt cache's prefix: "
                              "changing one misses the cache on the next call"))
    elif snapshot.get("cache_prefix_tokens") is not None:
        rows.append(("cache", f"nothing is cached: the stable prefix is "
                              f"{snapshot['cache_prefix_tokens']:,} tokens, the model caches "
                              f"from {snapshot['cache_minimum']:,}"))
    if snapshot["would_compact"]:
        rows.append(("notice", _compaction_notice(snapshot.get("compaction") or {})))
    if (failure := snapshot.get("would_fail")) is not None:
        rows.append(("notice", f"a run would stop here, calling no model: {failure}"))
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column(overflow="fold")
    for name, value in rows:
        grid.add_row(Text(name), Text(value))
    console.print(grid)


def _compaction_notice(compaction: dict[str, Any]) -> str:
    notice = (f"the next call is compacted first ({compaction.get('tokens', 0):,} tokens, over "
              f"the budget of {compaction.get('budget', 0):,})")
    if span := compaction.get("summarized"):
        notice += f": the summary part stands for {span['from']} to {span['through']}"
    if compaction.get("summary_pending"):
        notice += (f"; it is made when the call is sent (up to "
                   f"{compaction['summary_max_tokens']:,} tokens), its text not known yet")
    elif compaction.get("summary") == "reused":
        notice += "; the stored summary, sent as it is"
    return notice


_OUTLOOKS = {"ran": "ran before the pause", "answered": "answered by its decision",
             "will_run": "runs when the batch finishes: result not known yet",
             "awaiting_decision": "waiting for a decision: result not known yet",
             "offloaded": "answered with a text that goes to a file: not known yet"}


def _run_rows(snapshot: dict[str, Any]) -> list[tuple[str, str]]:
    """Whose next call this is, a paused batch's calls, and the messages queued behind."""
    run = snapshot.get("run")
    rows = [("run", "none active: the first call of a new run" if run is None else
             f"{run['id']} ({run['status']}), from its checkpoint after turn {run['turn']}")]
    if snapshot.get("pending_calls"):
        rows.append(("paused batch", f"its results go in {snapshot['batch_part']}: " + "; ".join(
            f"{c['name']} {c['tool_use_id']} {_OUTLOOKS.get(c['outlook'], c['outlook'])}"
            for c in snapshot["pending_calls"])))
    for part in snapshot.get("queued", []):
        rows.append(("queued", f"{part['id']} ({part['tokens']} tokens), not in this request: "
                               f"{part['preview']}"))
    return rows


def print_part(full: dict[str, Any]) -> None:
    """One part's whole content (``?full=``), exactly as sent, and its original if replaced."""
    state = "sent" if full["included"] else "left out (excluded)"
    click.echo(f"{full['id']}: {state}" + (", replaced" if "original" in full else ""))
    click.echo(full["content"])
    if "original" in full:
        click.echo("--- original, before the replace override:")
        click.echo(full["original"])


def print_overrides(title: str, answer: dict[str, Any]) -> None:
    """An override set as the API answered it, with the parts it added as pairs."""
    click.echo(title)
    if answer["overrides"]:
        print_table(answer["overrides"], OVERRIDE_COLUMNS)
    else:
        click.echo("  (none)")
    if answer["added"]:
        click.echo("Added as pairs (left out with the message they go with): "
                   + ", ".join(answer["added"]))


def print_answer(answer: dict[str, Any]) -> None:
    """A try's answer: the assistant's text, its tool calls (returned, never run), usage."""
    for block in answer["message"]["content"]:
        match block.get("type"):
            case "text":
                click.echo(block["text"])
            case "tool_use":
                click.echo(f"tool call {block['name']} (id {block['id']}), not run:")
                arguments = json.dumps(block.get("input"), indent=2, ensure_ascii=False)
                click.echo("\n".join("  " + line for line in arguments.splitlines()))
            case _:
                click.echo(cell_text(block))
    click.echo(f"stop reason: {answer['stop_reason']}")
    usage = ", ".join(f"{name.removesuffix('_tokens').replace('_', ' ')} {count}"
                      for name, count in answer["usage"].items())
    click.echo(f"usage: {usage} tokens")


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
