"""What hango knows about models beyond their name: the context window, in tokens, and the
shortest prefix the provider's prompt cache keeps.

Looked up by ``<provider>:<model>``; the longest matching prefix wins, so dated snapshots
(``claude-sonnet-4-5-20250929``, ``gpt-4o-2024-08-06``) find their family. A model not listed gets
its provider's default. The window bounds the compaction budget (``summarization``'s
``trigger_fraction`` is a fraction of it); it is the standard window, not a beta extension.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

from harness.providers import split_model

V = TypeVar("V")

DEFAULT_WINDOWS: dict[str, int] = {"anthropic": 200_000, "openai": 128_000, "scripted": 32_000}

# (provider, model name prefix) -> tokens
_WINDOWS: dict[tuple[str, str], int] = {
    ("anthropic", "claude-"): 200_000,
    ("openai", "gpt-3.5-turbo"): 16_385,
    ("openai", "gpt-4"): 8_192,
    ("openai", "gpt-4-turbo"): 128_000,
    ("openai", "gpt-4o"): 128_000,
    ("openai", "gpt-4.1"): 1_047_576,
    ("openai", "gpt-5"): 400_000,
    ("openai", "o1"): 200_000,
    ("openai", "o3"): 200_000,
    ("openai", "o4-mini"): 200_000,
}


def longest_prefix(table: Mapping[tuple[str, str], V], provider: str, name: str) -> V | None:
    """The value of the longest ``(provider, name prefix)`` key ``name`` starts with, so dated
    snapshots (claude-opus-4-20250514, gpt-4o-2024-08-06) find their family's row."""
    best, found = "", None
    for (known, prefix), value in table.items():
        if known == provider and name.startswith(prefix) and len(prefix) > len(best):
            best, found = prefix, value
    return found


def context_window(model: str) -> int:
    """The context window of ``model`` (``"<provider>:<model>"``)."""
    return known_window(model)[0]


def known_window(model: str) -> tuple[int, bool]:
    """``model``'s context window, and whether the table lists it (False: its provider's
    default, a guess)."""
    provider, name = split_model(model)
    window = longest_prefix(_WINDOWS, provider, name)
    if window is not None:
        return window, True
    return DEFAULT_WINDOWS.get(provider, min(DEFAULT_WINDOWS.values())), False


# (provider, model name prefix) -> the most output tokens one call may ask for (the models'
# "max output" column). Sources: Anthropic's "Models overview" (docs.anthropic.com/en/docs/
# about-claude/models/overview) and OpenAI's model pages (platform.openai.com/docs/models),
# as of 2025-11. A model not listed has no known ceiling: only its context window bounds it.
_MAX_OUTPUTS: dict[tuple[str, str], int] = {
    ("anthropic", "claude-3-haiku"): 4_096,
    ("anthropic", "claude-3-5"): 8_192,            # 3.5 Sonnet, 3.5 Haiku
    ("anthropic", "claude-3-7-sonnet"): 64_000,
    ("anthropic", "claude-sonnet-4"): 64_000,      # Sonnet 4, 4.5
    ("anthropic", "claude-haiku-4"): 64_000,       # Haiku 4.5
    ("anthropic", "claude-opus-4"): 32_000,        # Opus 4, 4.1
    ("anthropic", "claude-opus-4-5"): 64_000,
    ("openai", "gpt-3.5-turbo"): 4_096,
    ("openai", "gpt-4"): 8_192,
    ("openai", "gpt-4-turbo"): 4_096,
    ("openai", "gpt-4o"): 16_384,
    ("openai", "gpt-4.1"): 32_768,
    ("openai", "gpt-5"): 128_000,
    ("openai", "o1"): 100_000,
    ("openai", "o3"): 100_000,
    ("openai", "o4-mini"): 100_000,
}


def max_output(model: str) -> int | None:
    """The most output tokens ``model`` gives one call (None: not known)."""
    provider, name = split_model(model)
    return longest_prefix(_MAX_OUTPUTS, provider, name)


# (provider, model name prefix) -> the fewest tokens a prompt-cache prefix must hold to be
# cached: below it the provider caches nothing and reports no error. Anthropic's table (prompt
# caching, "minimum cacheable prompt length"); where published tables disagree the lower number
# is kept, so a prefix the provider would cache is never left unmarked. OpenAI caches the
# prompts of its models from 1,024 tokens on, by itself. A model not listed (the offline
# scripted ones, an OpenAI-compatible server's own models) has no known minimum.
_CACHE_MINIMUMS: dict[tuple[str, str], int] = {
    ("anthropic", "claude-3"): 1_024,              # 3.5 and 3.7 Sonnet, 3 Opus
    ("anthropic", "claude-3-haiku"): 2_048,
    ("anthropic", "claude-3-5-haiku"): 2_048,
    ("anthropic", "claude-opus-4"): 1_024,         # Opus 4, 4.1
    ("anthropic", "claude-sonnet-4"): 1_024,       # Sonnet 4 … 4.6
    ("anthropic", "claude-haiku-4"): 4_096,        # Haiku 4.5
    ("anthropic", "claude-opus-4-5"): 4_096,
    ("anthropic", "claude-opus-4-6"): 4_096,
    ("anthropic", "claude-opus-4-7"): 4_096,
    ("anthropic", "claude-opus-4-8"): 1_024,
    ("anthropic", "claude-sonnet-5"): 1_024,
    ("anthropic", "claude-opus-5"): 512,
    ("anthropic", "claude-fable-5"): 512,
    **{("openai", family): 1_024 for family in ("gpt-4o", "chatgpt-4o", "gpt-4.1", "gpt-4.5",
                                                "gpt-5", "o1", "o3", "o4")},
}


def cache_minimum(model: str) -> int | None:
    """The fewest tokens ``model``'s prompt cache keeps (None: not known)."""
    provider, name = split_model(model)
    return longest_prefix(_CACHE_MINIMUMS, provider, name)
