"""``default_stack``: the single place the middleware order is decided.

There is no merge algorithm and no user-supplied order: every slot is named here, in order, with
why it sits where it sits. A slot whose middleware is not built yet is listed as skipped (with
``None``), never silently absent, so the order test covers it from day one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.agent import AgentSpec
from harness.chain import Middleware
from harness.middleware import (
    filesystem,
    human_in_the_loop,
    memory,
    prompt_cache,
    skills,
    subagent,
    summarization,
)
from harness.middleware.allowlist import ToolAllowlistMiddleware
from harness.middleware.memory import DEFAULT_MAX_BYTES as MEMORY_MAX_BYTES
from harness.middleware.repair_tool_calls import RepairToolCallsMiddleware
from harness.middleware.repeat_call import DEFAULT_THRESHOLD, RepeatCallMiddleware
from harness.middleware.todo import TOOL_NAME as TODO_TOOL
from harness.middleware.todo import TodoMiddleware
from harness.providers.base import Provider
from harness.stores import FileStore, MemoryStore, SkillStore, SummaryStore
from harness.tools.base import Tool

NOT_YET = "skipped: arrives with the context inspector"


@dataclass(frozen=True, kw_only=True)
class RunDeps:
    """The stores and services the context middlewares use, bound to one run."""

    memory: MemoryStore | None = None
    skills: SkillStore | None = None
    files: FileStore | None = None
    summaries: SummaryStore | None = None
    # The run's provider and model name: summarization and subagents make their own calls.
    provider: Provider | None = None
    model: str = ""
    # Every tool an agent could be given (subagents pick theirs from here).
    tools: tuple[Tool, ...] = ()
    context_window: int = 200_000  # the model's, in tokens
    # The most memory content (UTF-8 bytes) a run puts in its prompt (HANGO MEMORY_MAX_BYTES).
    memory_max_bytes: int = MEMORY_MAX_BYTES
    # Tool results longer than this (characters) are offloaded to a file (HANGO
    # LARGE_TOOL_RESULT_CHARS).
    large_tool_result_chars: int = filesystem.DEFAULT_OFFLOAD_THRESHOLD
    # Subagents: how deep they may nest (1 = a run's subagents start none) and each one's
    # turn limit (HANGO SUBAGENT_MAX_DEPTH, SUBAGENT_MAX_TURNS).
    subagent_max_depth: int = subagent.DEFAULT_MAX_DEPTH
    subagent_max_turns: int = subagent.DEFAULT_MAX_TURNS


@dataclass(frozen=True, kw_only=True)
class StackConfig:
    agent: AgentSpec
    repeat_call_threshold: int = DEFAULT_THRESHOLD
    deps: RunDeps = field(default_factory=RunDeps)
    # Inspect mode: assemble the next request, never call a model from a middleware.
    capture_only: bool = False
    subagent_depth: int = 0  # 0 for a run, 1 for a subagent's own loop, …


@dataclass(frozen=True, kw_only=True)
class Slot:
    name: str
    middleware: Middleware | None
    why: str


def stack_slots(cfg: StackConfig) -> list[Slot]:
    return [
        # Skills first: its index and load_skill tool are the most stable part of the prompt,
        # and a loaded skill's tools must exist before anything filters tools.
        Slot(name="skills", middleware=skills.from_config(cfg), why=skills.WHY),
        # Filesystem before summarization, so summarization sees offloaded tool results.
        Slot(name="filesystem", middleware=filesystem.from_config(cfg), why=filesystem.WHY),
        # Subagents next: the `task` tool wraps a whole child loop built from this same stack.
        Slot(name="subagent", middleware=subagent.from_config(cfg), why=subagent.WHY),
        # Context overrides right before summarization, so compaction and the budget see the
        # filtered history (the context inspector).
        Slot(name="context_overrides", middleware=None, why=NOT_YET),
        Slot(name="summarization", middleware=summarization.from_config(cfg),
             why=summarization.WHY),
        # Repair before anything reads the history as a sequence of call/result pairs.
        Slot(name="repair_tool_calls", middleware=RepairToolCallsMiddleware(),
             why="a history with unanswered tool calls is refused by providers"),
        Slot(name="todo", middleware=TodoMiddleware() if _allows(cfg, TODO_TOOL) else None,
             why="the plan: write_todos plus its rendering in the system prompt"
             if _allows(cfg, TODO_TOOL) else "skipped: write_todos is not in allowed_tools"),
        # Outside the real tool call so a blocked repeat never reaches the tool.
        Slot(name="repeat_call",
             middleware=RepeatCallMiddleware(threshold=cfg.repeat_call_threshold),
             why="answer the Nth identical call with a reminder instead of running it"),
        # Prompt cache before memory: memory blocks come later in the chain, so they land after
        # the breakpoint and editing memory does not invalidate the cached prefix.
        Slot(name="prompt_cache", middleware=prompt_cache.from_config(cfg),
             why=prompt_cache.WHY),
        Slot(name="memory", middleware=memory.from_config(cfg), why=memory.WHY),
        Slot(name="human_in_the_loop", middleware=human_in_the_loop.from_config(cfg),
             why=human_in_the_loop.WHY),
        # Allowlist last: innermost for model and tool calls, so no earlier middleware can
        # re-add a forbidden tool.
        Slot(name="tool_allowlist",
             middleware=ToolAllowlistMiddleware(allowed=cfg.agent.allowed_tools),
             why="the agent's allowed_tools, enforced where nothing can bypass it"),
    ]


def _allows(cfg: StackConfig, tool: str) -> bool:
    """Whether the agent's allowlist admits ``tool``: a middleware that exists only for a tool
    the agent may not call (and would prompt the model to call it) is left out."""
    return cfg.agent.allowed_tools is None or tool in cfg.agent.allowed_tools


def default_stack(cfg: StackConfig) -> list[Middleware]:
    return [slot.middleware for slot in stack_slots(cfg) if slot.middleware is not None]
