"""How ``hango context`` prints the context inspector: the snapshot's part tables with its
framing, totals and notices, the model settings its calls use and where each came from, one
part's whole content, an override set, and a try's answer.

Like every table of the command (:mod:`cli.output`), each cell wraps the API's data in ``Text``,
so it is never read as rich markup.
"""

from __future__ import annotations

import json
from typing import Any

import click
from rich import box
from rich.table import Table
from rich.text import Text

from cli.output import Column, cell_text, clip, print_table, terminal

# Plain ASCII, so the column reads the same in any terminal and in a log.
SENT, LEFT_OUT = "[x]", "[ ]"
PART_GROUPS = ("system", "tools", "messages")
OVERRIDE_COLUMNS: list[Column] = [
    ("part", lambda o: o["part"]), ("action", lambda o: o["action"]),
    ("replacement", lambda o: clip(cell_text(o.get("replacement")))),
]
_COUNTED = {"provider": "counted by the provider's token counter",
            "tokenizer": "counted with the {} tokenizer",
            "estimate": "estimated: no tokenizer for this model",
            "vllm": "counted by the model's vLLM server, its chat template applied",
            "llama.cpp": "counted by the model's llama.cpp server, its chat template applied",
            "llama-cpp-python": "the parts counted by the model's llama-cpp-python server"}


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
    if part.get("dropped_by_template"):
        notes.append("dropped by the server's chat template: not sent")
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
    console = terminal()
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
    if (fallback := (snapshot.get("provider_count") or {}).get("fallback")) is not None:
        rows.append(("counted", fallback))
    if "cost" in snapshot:
        rows.append(("cost", _cost_text(snapshot["cost"])))
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
    if (settings := snapshot.get("model_settings")) is not None:
        console.print(Text("model settings", style="bold"))
        console.print(_settings_table(settings))


# Where a setting's value comes from (the snapshot's ``*_source``); a setting the agent does
# not set is not sent at all, and the model's server decides.
SOURCES = {"agent": "agent: its config sets it",
           "model_table": "model_table: hango's table of known models",
           "server": "server: the model's server reports it",
           "default": "default: hango's, a guess for a model it does not know (set it)"}
_OUTPUT_DEFAULT = "default: hango's 4,096, within the model's maximum and half its window"
_NOT_SENT = "default: not sent, the server decides"
_SENT_IF_SET = ("temperature", "top_p", "stop", "tool_choice", "parallel_tool_calls",
                "reasoning_effort")


def settings_rows(settings: dict[str, Any]) -> list[tuple[str, str, str]]:
    """Each model setting the agent's calls use: its name, its effective value, where it came
    from."""
    window, output = settings["context_window_source"], settings["max_output_tokens_source"]
    rows = [("context_window", f"{settings['context_window']:,} tokens",
             SOURCES.get(window, window)),
            ("max_output_tokens", f"{settings['max_output_tokens']:,} tokens",
             _OUTPUT_DEFAULT if output == "default" else SOURCES.get(output, output))]
    for name in _SENT_IF_SET:
        value = settings.get(name)
        if value is None or value == []:
            rows.append((name, "not sent", _NOT_SENT))
        else:
            text = value if isinstance(value, str) else json.dumps(value)
            rows.append((name, text, SOURCES["agent"]))
    return rows


def _settings_table(settings: dict[str, Any]) -> Table:
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, header_style="bold")
    table.add_column("setting", no_wrap=True)
    table.add_column("value", overflow="fold")
    table.add_column("from", overflow="fold")
    for row in settings_rows(settings):
        table.add_row(*(Text(cell) for cell in row))
    return table


def _cost_text(cost: dict[str, Any] | None) -> str:
    """The next call's input cost as a range (the prompt cache decides where in it)."""
    if cost is None:
        return "the model has no known price (a tenant's own: hango prices set)"
    currency = cost["currency"]
    return (f"input {cost['likely']} {currency} likely, {cost['all_cached']} with all of the "
            f"cached prefix read, {cost['none_cached']} with none; the answer "
            f"{cost['output_rate']} {currency} a million tokens (price: {cost['source']})")


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


_OUTLOOKS = {"ran": "ran before the pause",
             "answered": "answered by its decision (or the caller's result)",
             "will_run": "runs when the batch finishes: result not known yet",
             "awaiting_decision": "waiting for a decision: result not known yet",
             "awaiting_result": "waiting for the caller's result: not known yet",
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
