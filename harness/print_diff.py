"""Comparing two request prints (:mod:`harness.fingerprint`): each part added, removed, changed
or the same, with its token delta, and the first part that breaks the earlier call's cached
prefix (the change that costs a cache miss)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from harness.messages import PartPrint, RequestPrint

Status = Literal["added", "removed", "changed", "same"]


@dataclass(frozen=True, kw_only=True)
class PartDiff:
    part: str
    status: Status
    tokens: int  # now (0 for a removed part)
    tokens_before: int  # in the earlier call (0 for an added part)

    @property
    def delta(self) -> int:
        return self.tokens - self.tokens_before


@dataclass(frozen=True, kw_only=True)
class CacheBreak:
    """The first part of the earlier call's cached prefix the next call does not send as it
    was, at the same place: from it on, the provider reads nothing from the cache."""

    part: str
    status: Status  # changed, removed or added (another part in its place), or same (moved
    # out of the prefix: the cache mark now sits before it)
    index: int  # its position in the earlier call's prefix


@dataclass(frozen=True, kw_only=True)
class Diff:
    parts: tuple[PartDiff, ...]  # the next call's parts in order, then the removed ones
    cache_break: CacheBreak | None  # None: the earlier prefix is sent whole (or there was none)
    cached_before: int  # the earlier call's cached-prefix tokens
    cached_after: int

    @property
    def tokens_before(self) -> int:
        return sum(p.tokens_before for p in self.parts)

    @property
    def tokens_after(self) -> int:
        return sum(p.tokens for p in self.parts)


def diff(earlier: RequestPrint, now: RequestPrint) -> Diff:
    """What the ``now`` call sends differently from the ``earlier`` one, part by part."""
    before = {p.part: p for p in earlier.parts}
    after_ids = {p.part for p in now.parts}
    parts = [_part_diff(before.get(p.part), p) for p in now.parts]
    parts += [PartDiff(part=p.part, status="removed", tokens=0, tokens_before=p.tokens)
              for p in earlier.parts if p.part not in after_ids]
    return Diff(parts=tuple(parts), cache_break=_cache_break(earlier, now),
                cached_before=earlier.cached_tokens, cached_after=now.cached_tokens)


def _part_diff(old: PartPrint | None, new: PartPrint) -> PartDiff:
    if old is None:
        return PartDiff(part=new.part, status="added", tokens=new.tokens, tokens_before=0)
    status: Status = "same" if old.digest == new.digest else "changed"
    return PartDiff(part=new.part, status=status, tokens=new.tokens, tokens_before=old.tokens)


def _cache_break(earlier: RequestPrint, now: RequestPrint) -> CacheBreak | None:
    """The first part of ``earlier``'s cached prefix ``now`` does not send as it was, at its
    place; with none, the first one ``now``'s cache mark no longer covers."""
    now_parts = {p.part: p for p in now.parts}
    earlier_ids = {p.part for p in earlier.parts}
    for index, old in enumerate(earlier.parts[:earlier.cached]):
        new = now.parts[index] if index < len(now.parts) else None
        if new == old:
            continue
        if new is not None and new.part == old.part:
            return CacheBreak(part=old.part, status="changed", index=index)
        if old.part not in now_parts:
            return CacheBreak(part=old.part, status="removed", index=index)
        if new is not None and new.part not in earlier_ids:
            return CacheBreak(part=new.part, status="added", index=index)
        # Sent, but elsewhere (another part in its place).
        moved = now_parts[old.part]
        return CacheBreak(part=old.part, index=index,
                          status="same" if moved.digest == old.digest else "changed")
    if now.cached < earlier.cached:  # sent as it was, but the mark now sits before it
        return CacheBreak(part=earlier.parts[now.cached].part, status="same", index=now.cached)
    return None
