"""Which tokenizer counts which model, and the framing each model's API adds around a request.

:func:`tokenizer_for` picks the :class:`harness.tokens.base.Tokenizer` for a ``<provider>:<model>``
string by longest prefix, like :mod:`harness.providers.models`:

================ ============================================ ==================================
tokenizer        models                                       counted with
================ ============================================ ==================================
``o200k_base``   gpt-4o*, gpt-4.1*, gpt-4.5*, gpt-5*, o1*,    quicktok-v1 (vocabulary in the
                 o3*, o4*, chatgpt-4o*, gpt-oss*              wheel, byte-identical to OpenAI's)
``cl100k_base``  gpt-4, gpt-4-turbo*, gpt-3.5*                the same
``claude-v3``    claude-3*, claude-{opus,sonnet,haiku}-4*     ctok, family v3
                 (Claude 3 through Opus 4.6)
``claude-v4.7``  claude-opus-4-7*                             ctok, family v4.7
``claude-v4.8``  claude-opus-4-8*, claude-{opus,sonnet,       ctok, family v4.8 (v4.7's
                 fable}-5*                                    vocabulary, a six-token frame)
``estimate``     scripted:*, unknown models, OpenAI-          :mod:`harness.tokens.estimator`
                 compatible servers running other models
================ ============================================ ==================================

ctok's families follow its README's version table ([3.0, 4.7) → v3, [4.7, 4.8) → v4.7, ≥ 4.8 →
v4.8). A text's count is ctok's single-message count less that message's frame. Both packages
read their data from their own install directory: nothing is downloaded, nothing is written.

Where each framing number comes from (tokens; *measured* numbers were checked against a
provider's count, *documented* ones are the provider's own, *estimates* are reasoned, not
measured — no offline tokenizer knows how a provider renders a request):

OpenAI (chat completions, as :mod:`harness.providers.openai_chat` maps them)
  * 3 per request, the reply's priming ``<|start|>assistant<|message|>`` — documented (OpenAI
    cookbook, "How to count tokens with tiktoken");
  * 4 per message, system message included: the cookbook's 3 per message plus the role, one token
    in both encodings. A tool result is a message of its own (role ``tool``), so it costs 4 and a
    user message holding only results adds no message of its own — documented;
  * a tool definition by OpenAI's published rule for the namespace it renders the functions
    as (:func:`harness.providers.openai_wire.function_tokens`), not as its JSON: 7 per function
    with o200k (the cookbook's ``func_init`` for gpt-4o), 10 with cl100k, and 12 once per request
    that has tools (``func_end``) — documented;
  * a failed tool result is counted with the ``Error: `` its content is sent with (the wire has
    no ``is_error``: :mod:`harness.providers.openai_wire`), a result's image as the line of text
    it is sent as;
  * 3 per tool call — estimate (each call is its own assistant segment naming the function; the
    call id, counted here as content, is likely never shown to the model);
  * 0 per ``"\\n\\n"`` joining text blocks — measured: it mostly merges with the text around it
    (+0.20 on average, ``bench/bench_tokens.py``).

Claude (Messages API)
  * the single-message frame ctok measured against ``count_tokens``: 7 (v3), 11 (v4.7), 6
    (v4.8). It pays one turn and the assistant prompt, so a message costs about half of it — 4,
    6, 3 — and a request the rest — 3, 5, 3. The split is an estimate: ctok counts the legacy
    turn markers ``"\\n\\nHuman:"`` and ``"\\n\\nAssistant:"`` at 4 + 4 (v3) and 5 + 7 (v4.7);
  * 0 for the system prompt — measured: Anthropic's documented example (system "You are a
    scientist", user "Hello, Claude": 14 tokens) is 7 + 4 + 3 with ctok's part counts;
  * the tool-use system prompt, once when tools are offered: 346 for Claude 3.5 Sonnet and
    later, 530 Claude 3 Opus, 159 Claude 3 Sonnet, 264 Claude 3 Haiku and 3.5 Haiku —
    documented (Anthropic's tool-use pricing table, ``tool_choice`` auto: hango never sets it);
    467 for v4.7 and v4.8 — estimate (346 × 1.35, the v4.7/v3 ratio ctok gives the bench
    corpus's prose and code);
  * 0 per tool — measured as far as it goes: Anthropic's documented one-tool example (403
    tokens) leaves no room for a wrapper once the preamble and ctok's part counts are taken out
    (it leaves −14: the schema is rendered more compactly than its JSON);
  * 20 per tool call and 19 per result (v3), 27 and 19 (v4.7, v4.8) — estimate: ctok's count of
    the ``<function_calls><invoke name="">`` / ``<function_results><result>`` markup of Claude's
    tool-use format;
  * 1 per ``"\\n\\n"`` joining text blocks — measured (+0.80 v3 and v4.7, +1.0 v4.8 on average,
    ``bench/bench_tokens.py``);
  * a tool result's image by Anthropic's published rule, about width × height / 750
    (:mod:`harness.images`) — documented; the estimate counts images so too.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable
from dataclasses import replace
from functools import cache
from pathlib import Path
from types import ModuleType

from harness.providers.models import longest_prefix
from harness.providers.openai_wire import function_tokens, image_tokens, tool_result_content
from harness.tokens.base import (
    ESTIMATE,
    Counted,
    FamilyTokenizer,
    Framing,
    Tokenizer,
)
from harness.tokens.counts import EncodingCounts

log = logging.getLogger(__name__)

# ctok's single-message frame per version it is asked for (its ``tokenize`` starts with this
# many ⟨pad⟩ tokens; a test pins them).
CTOK_FRAMES: dict[str, int] = {"3.0": 7, "4.7": 11, "4.8": 6}


def _quicktok(encoding: str) -> Callable[[str], int]:
    import quicktok  # the encoding loads in ~0.2-0.6 s: only for a model that needs it

    return quicktok.get_encoding(encoding).count


def _ctok(version: str) -> Callable[[str], int]:
    import ctok

    frame = CTOK_FRAMES[version]

    def count(text: str) -> int:
        return ctok.token_count(text, version) - frame

    count("")  # load the vocabulary now rather than inside the first request
    return count


# encoding name -> how to load its text counter
ENCODINGS: dict[str, Callable[[], Callable[[str], int]]] = {
    "o200k_base": lambda: _quicktok("o200k_base"),
    "cl100k_base": lambda: _quicktok("cl100k_base"),
    "claude-v3": lambda: _ctok("3.0"),
    "claude-v4.7": lambda: _ctok("4.7"),
    "claude-v4.8": lambda: _ctok("4.8"),
}

_OPENAI = Framing(request=3, system=4, message=4, join=0, tool_use=3, tool_result=4,
                  results_are_messages=True)


def _claude(frame: int, *, tools: int, tool_use: int, tool_result: int = 19) -> Framing:
    message = (frame + 1) // 2
    return Framing(request=frame - message, system=0, message=message, join=1,
                   tool_use=tool_use, tool_result=tool_result, tool=0, tools=tools)


# profile -> (encoding, framing): what one group of models costs. OpenAI's tools and framing are
# counted by its published rules; Claude's tools are its tokenizer over their JSON, which is not
# how Claude renders them, and its framing is partly estimated: both labelled estimates.
PROFILES: dict[str, tuple[str, Framing]] = {
    "gpt-4o": ("o200k_base", replace(_OPENAI, tool=7, tools=12)),
    "gpt-4": ("cl100k_base", replace(_OPENAI, tool=10, tools=12)),
    "claude-3-opus": ("claude-v3", _claude(7, tools=530, tool_use=20)),
    "claude-3-sonnet": ("claude-v3", _claude(7, tools=159, tool_use=20)),
    "claude-3-haiku": ("claude-v3", _claude(7, tools=264, tool_use=20)),
    "claude-3.5": ("claude-v3", _claude(7, tools=346, tool_use=20)),  # 3.5 Sonnet … Opus 4.6
    "claude-4.7": ("claude-v4.7", _claude(11, tools=467, tool_use=27)),
    "claude-4.8": ("claude-v4.8", _claude(6, tools=467, tool_use=27)),
}

# (provider, model name prefix) -> profile; the longest matching prefix wins, so dated snapshots
# (claude-opus-4-20250514, gpt-4o-2024-08-06) find their family. Anything else is estimated.
MODELS: dict[tuple[str, str], str] = {
    ("openai", "gpt-3.5"): "gpt-4",
    ("openai", "gpt-4"): "gpt-4",
    ("openai", "gpt-4o"): "gpt-4o",
    ("openai", "chatgpt-4o"): "gpt-4o",
    ("openai", "gpt-4.1"): "gpt-4o",
    ("openai", "gpt-4.5"): "gpt-4o",
    ("openai", "gpt-5"): "gpt-4o",
    ("openai", "gpt-oss"): "gpt-4o",
    ("openai", "o1"): "gpt-4o",
    ("openai", "o3"): "gpt-4o",
    ("openai", "o4"): "gpt-4o",
    ("anthropic", "claude-3"): "claude-3.5",  # claude-3-5-sonnet, claude-3-7-sonnet
    ("anthropic", "claude-3-opus"): "claude-3-opus",
    ("anthropic", "claude-3-sonnet"): "claude-3-sonnet",
    ("anthropic", "claude-3-haiku"): "claude-3-haiku",
    ("anthropic", "claude-3-5-haiku"): "claude-3-haiku",
    ("anthropic", "claude-opus-4"): "claude-3.5",
    ("anthropic", "claude-sonnet-4"): "claude-3.5",
    ("anthropic", "claude-haiku-4"): "claude-3.5",
    ("anthropic", "claude-opus-4-7"): "claude-4.7",
    ("anthropic", "claude-opus-4-8"): "claude-4.8",
    ("anthropic", "claude-opus-5"): "claude-4.8",
    ("anthropic", "claude-sonnet-5"): "claude-4.8",
    ("anthropic", "claude-fable-5"): "claude-4.8",
}


# The encodings of OpenAI's models, whose wire marks a failed tool result in its content.
OPENAI_ENCODINGS = ("o200k_base", "cl100k_base")


# Bumped whenever a message's content is counted differently for the same encoding (which
# texts of a block count, how a result's content is carried): counts stored under an older key
# are then counted again rather than trusted (Tokenizer.counts_key).
COUNT_RULES = 1
# encoding -> (the module that counts it, its distribution's name)
_PACKAGES = {"o200k_base": ("quicktok", "quicktok_v1"), "cl100k_base": ("quicktok", "quicktok_v1"),
             "claude-v3": ("ctok", "ctok"), "claude-v4.7": ("ctok", "ctok"),
             "claude-v4.8": ("ctok", "ctok")}


def counts_key(encoding: str) -> str | None:
    """How an encoding's counts are named where they are stored: the encoding, the version of
    the package that counts it, and the counting rules; None when the version cannot be told
    (then nothing is stored or taken)."""
    module, dist = _PACKAGES[encoding]
    version = _version(importlib.import_module(module), dist)
    return None if version is None else f"{encoding}@{dist}-{version}/r{COUNT_RULES}"


def _version(module: ModuleType, dist: str) -> str | None:
    """The package's version: its ``__version__``, else its dist-info directory's name.
    (importlib.metadata would parse the metadata with the email package, which loads socket:
    counting stays clear of anything network.)"""
    if isinstance(found := getattr(module, "__version__", None), str):
        return found
    site = Path(module.__file__ or "").resolve().parent.parent
    infos = sorted(site.glob(f"{dist}-*.dist-info"))
    return infos[0].name[len(dist) + 1:-len(".dist-info")] if len(infos) == 1 else None


@cache
def _content(encoding: str) -> EncodingCounts | None:
    try:
        if encoding in OPENAI_ENCODINGS:
            return EncodingCounts(ENCODINGS[encoding](), result_content=tool_result_content,
                                  tool_content=function_tokens, image=image_tokens,
                                  key=counts_key(encoding))
        return EncodingCounts(ENCODINGS[encoding](), key=counts_key(encoding))
    except ImportError as exc:  # an install without its step: count, but say how
        log.warning("token counts for %s fall back to the estimate: %s (make install)",
                    encoding, exc)
        return None


@cache
def _profile(profile: str) -> Tokenizer:
    encoding, framing = PROFILES[profile]
    content = _content(encoding)
    if content is None:
        return ESTIMATE
    by_rule: Counted = "rule" if encoding in OPENAI_ENCODINGS else "estimate"
    return FamilyTokenizer(name=encoding, content=content, framing=framing,
                           tool_source=by_rule, framing_source=by_rule)


def profile_for(model: str) -> str | None:
    """The profile of ``model`` (``"<provider>:<model>"``), or None where no tokenizer fits."""
    provider, _, name = model.partition(":")
    return longest_prefix(MODELS, provider, name.lower())


def tokenizer_for(model: str) -> Tokenizer:
    """The tokenizer for ``model`` (``"<provider>:<model>"``): the family's own where one is
    known, else the estimate. One instance per profile, so its caches serve every caller."""
    profile = profile_for(model)
    return ESTIMATE if profile is None else _profile(profile)
