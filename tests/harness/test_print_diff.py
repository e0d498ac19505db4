"""harness.print_diff: what each part of a call became since an earlier call, and where the
earlier call's cached prefix breaks."""

from __future__ import annotations

from dataclasses import replace

from harness.messages import PartPrint, RequestPrint
from harness.print_diff import CacheBreak, diff

P = PartPrint


def printed(*parts: tuple[str, int, int], cached: int = 0) -> RequestPrint:
    return RequestPrint(parts=tuple(P(*p) for p in parts), cached=cached)


BASE = printed(("tool:echo", 1, 30), ("system:agent", 2, 100), ("system:todo", 3, 5),
               ("message:1", 4, 10), ("message:2", 5, 20), cached=2)


def test_the_diff_says_what_each_part_became_and_where_the_cache_breaks():
    now = printed(("tool:echo", 1, 30), ("system:agent", 8, 120), ("message:1", 4, 10),
                  ("message:2", 5, 20), ("message:3", 6, 40), cached=2)
    found = diff(BASE, now)
    assert [(p.part, p.status, p.delta) for p in found.parts] == [
        ("tool:echo", "same", 0), ("system:agent", "changed", 20), ("message:1", "same", 0),
        ("message:2", "same", 0), ("message:3", "added", 40), ("system:todo", "removed", -5)]
    assert found.cache_break == CacheBreak(part="system:agent", status="changed", index=1)
    assert (found.cached_before, found.cached_after) == (130, 150)
    assert (found.tokens_before, found.tokens_after) == (165, 220)


def test_a_prefix_sent_as_it_was_breaks_nothing():
    now = replace(BASE, parts=(*BASE.parts[:2], P("system:todo", 99, 6), *BASE.parts[3:],
                               P("message:3", 6, 40)))
    assert diff(BASE, now).cache_break is None


def test_a_part_removed_or_added_in_the_prefix_breaks_it():
    removed = printed(("tool:echo", 1, 30), ("message:1", 4, 10), cached=0)
    assert diff(BASE, removed).cache_break == CacheBreak(
        part="system:agent", status="removed", index=1)
    added = printed(("tool:new", 7, 9), ("tool:echo", 1, 30), ("system:agent", 2, 100),
                    cached=3)
    assert diff(BASE, added).cache_break == CacheBreak(
        part="tool:new", status="added", index=0)
    # The same parts, but the mark moved before the agent's prompt: it is no longer read.
    unmarked = replace(BASE, cached=1)
    assert diff(BASE, unmarked).cache_break == CacheBreak(
        part="system:agent", status="same", index=1)
