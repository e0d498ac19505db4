"""What a run's middleware stack is built from: the agent, the run's stores and services, and
the server's knobs (with their defaults).

A leaf module: every middleware's ``from_config`` reads a :class:`StackConfig`, and
:mod:`harness.stack` assembles the stack from one, so neither imports the other for it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from harness.agent import AgentSpec
from harness.providers.base import Provider
from harness.stores import FileStore, MemoryStore, OverrideStore, SkillStore, SummaryStore
from harness.tokens.base import ESTIMATE, Tokenizer
from harness.tools.base import Tool

if TYPE_CHECKING:  # the MCP SDK is imported where a run uses a server, not by every stack
    from harness.mcp.access import CallJournal, McpAccess

MEMORY_MAX_BYTES = 32_768
LARGE_TOOL_RESULT_CHARS = 20_000
SUBAGENT_MAX_DEPTH = 1  # a run's subagents start no subagents of their own
SUBAGENT_MAX_TURNS = 20
REPEAT_CALL_THRESHOLD = 3


@dataclass(frozen=True, kw_only=True)
class RunDeps:
    """The stores and services the context middlewares use, bound to one run."""

    memory: MemoryStore | None = None
    skills: SkillStore | None = None
    files: FileStore | None = None
    summaries: SummaryStore | None = None
    overrides: OverrideStore | None = None  # the context inspector's overrides
    # The run's provider and model name: summarization and subagents make their own calls.
    provider: Provider | None = None
    model: str = ""
    # Every tool an agent could be given (subagents pick theirs from here).
    tools: tuple[Tool, ...] = ()
    context_window: int = 200_000  # the model's, in tokens
    # Counts tokens as the model's family does (the estimate where no tokenizer fits): the
    # summarization budget and the inspector count alike.
    tokenizer: Tokenizer = ESTIMATE
    # The most memory content (UTF-8 bytes) a run puts in its prompt (HANGO_MEMORY_MAX_BYTES).
    memory_max_bytes: int = MEMORY_MAX_BYTES
    # Tool results longer than this (characters) are offloaded to a file
    # (HANGO_LARGE_TOOL_RESULT_CHARS).
    large_tool_result_chars: int = LARGE_TOOL_RESULT_CHARS
    # Subagents: how deep they may nest (1 = a run's subagents start none) and each one's
    # turn limit (HANGO_SUBAGENT_MAX_DEPTH, HANGO_SUBAGENT_MAX_TURNS).
    subagent_max_depth: int = SUBAGENT_MAX_DEPTH
    subagent_max_turns: int = SUBAGENT_MAX_TURNS
    # The agent's MCP servers (None: it uses none) and the run's journal of the calls it sent
    # to them (None: not journaled, as in the inspector).
    mcp: McpAccess | None = None
    mcp_journal: CallJournal | None = None


@dataclass(frozen=True, kw_only=True)
class StackConfig:
    agent: AgentSpec
    repeat_call_threshold: int = REPEAT_CALL_THRESHOLD
    deps: RunDeps = field(default_factory=RunDeps)
    # Inspect mode: assemble the next request, never call a model from a middleware.
    capture_only: bool = False
    subagent_depth: int = 0  # 0 for a run, 1 for a subagent's own loop, …
