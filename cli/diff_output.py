"""How ``hango context show --diff`` prints the request diff: one row per part with what became
of it since the earlier call and its token delta, then the totals and where the cache breaks.

Every cell is the API's data wrapped in ``Text``, so it is never read as rich markup.
"""

from __future__ import annotations

from typing import Any

from rich import box
from rich.table import Table
from rich.text import Text

from cli import output

_STATUS_STYLE = {"added": "green", "removed": "red", "changed": "yellow", "same": "dim"}


def signed(value: int) -> str:
    return f"+{value:,}" if value > 0 else f"{value:,}" if value < 0 else "0"


def print_diff(diff: dict[str, Any]) -> None:
    """The ``diff`` of a snapshot answered with ``?against=``."""
    console = output.terminal()
    against = diff["against"]
    console.print(Text(f"against run {against['run']}, turn {against['turn']}", style="bold"))
    cut = diff.get("cache_break")
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    for header, justify in (("status", "left"), ("part", "left"), ("before", "right"),
                            ("now", "right"), ("delta", "right"), ("", "left")):
        table.add_column(header, justify=justify)  # type: ignore[arg-type]
    for part in diff["parts"]:
        note = "breaks the cached prefix" if cut and cut["part"] == part["id"] else ""
        table.add_row(Text(part["status"], style=_STATUS_STYLE.get(part["status"], "")),
                      Text(part["id"]), Text(str(part["tokens_before"])),
                      Text(str(part["tokens"])), Text(signed(part["delta"])),
                      Text(note, style="bold red"))
    console.print(table)
    totals, cached = diff["totals"], diff["cached_prefix"]
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column(overflow="fold")
    counts = {s: sum(p["status"] == s for p in diff["parts"]) for s in _STATUS_STYLE}
    grid.add_row(Text("parts"), Text(", ".join(f"{n} {s}" for s, n in counts.items())))
    grid.add_row(Text("tokens"), Text(f"{totals['before']:,} → {totals['after']:,} "
                                      f"({signed(totals['delta'])})"))
    grid.add_row(Text("cache"), Text(
        f"the earlier call's cached prefix ({cached['before']:,} tokens) is sent as it was"
        if cut is None else
        f"{cut['part']} ({cut['status']}) breaks the earlier call's cached prefix "
        f"({cached['before']:,} tokens): the next call misses the cache from there"))
    grid.add_row(Text("that call"), Text(_cache_text(against["call"])))
    console.print(grid)


def _cache_text(call: dict[str, Any]) -> str:
    """What the prompt cache did for the earlier call, next to the inspector's prediction."""
    ratio = call["cache_read_ratio"]
    read = ("the provider reported no input" if ratio is None else
            f"the provider read {call['cache_read_tokens']:,} tokens from its cache "
            f"({ratio:.0%} of the input) and wrote {call['cache_write_tokens']:,}")
    return f"{read}; the inspector predicted {call['predicted_cached_tokens']:,} cached"
