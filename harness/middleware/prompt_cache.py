"""Placeholder while the prompt_cache middleware is built (issue 4).

`from_config` returns None, so its slot in `harness.stack` is skipped, with `WHY` as the reason.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness.chain import Middleware
    from harness.stack import StackConfig

WHY = "skipped: not built yet"


def from_config(cfg: StackConfig) -> Middleware | None:
    return None
