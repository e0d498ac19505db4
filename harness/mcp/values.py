"""The MCP values the rest of the harness reads without loading the SDK: a listed tool, a
listing's fingerprint, and the failure to reach a server. The SDK itself is imported only by
what connects (:mod:`harness.mcp.client`) and calls (:mod:`harness.mcp.calls`), so a process
that never uses a server never pays for it (~0.5 s at start)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.errors import HarnessError
from harness.mcp import SERVER_UNAVAILABLE

# The request's _meta key carrying the call's idempotency key, ``<run>:<turn>:<tool call id>``:
# a server that honours it runs a repeated call once.
IDEMPOTENCY_KEY = "io.hango/idempotency-key"


def idempotency_key(run_id: str, turn: int, tool_use_id: str) -> str:
    """A call's key, unique in its run even where a model reuses its call ids from one turn to
    the next (some OpenAI-compatible servers number them from 0 in every answer)."""
    return f"{run_id}:{turn}:{tool_use_id}"


class McpUnavailable(HarnessError):
    """The server could not be reached or did not answer as an MCP server (why, in the
    message); nothing was executed."""

    code = SERVER_UNAVAILABLE


@dataclass(frozen=True, kw_only=True)
class McpTool:
    """One tool as its server lists it."""

    name: str
    description: str
    input_schema: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description,
                "input_schema": self.input_schema}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> McpTool:
        return cls(name=str(data["name"]), description=str(data.get("description") or ""),
                   input_schema=dict(data.get("input_schema") or {"type": "object"}))


def digest(tools: tuple[McpTool, ...]) -> str:
    """A listing's fingerprint: equal exactly when the tools (names, descriptions, schemas)
    are."""
    text = json.dumps([t.to_json() for t in tools], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]
