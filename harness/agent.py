"""The harness's view of an agent: what the loop and the chain need, nothing of Django."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

DEFAULT_MAX_TURNS = 50
DEFAULT_MAX_TOKENS = 4096


@dataclass(frozen=True, kw_only=True)
class AgentSpec:
    id: str
    name: str
    model: str  # "<provider>:<model>"
    system_prompt: str = ""
    allowed_tools: tuple[str, ...] | None = None  # None = every tool
    config: dict[str, Any] = field(default_factory=dict)
    max_tokens: int = DEFAULT_MAX_TOKENS
    default_max_turns: int = DEFAULT_MAX_TURNS  # when config has no max_turns

    @property
    def max_turns(self) -> int:
        return int(self.config.get("max_turns", self.default_max_turns))
