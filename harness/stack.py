"""``default_stack``: the single place the middleware order is decided.

There is no merge algorithm and no user-supplied order: every slot is named here, in order, with
why it sits where it sits. A slot whose middleware is not built yet is listed as skipped (with
``None``), never silently absent, so the order test covers it from day one.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from harness.agent import AgentSpec
from harness.chain import Chain, Middleware
from harness.deps import StackConfig
from harness.errors import ConfigurationError
from harness.loop import Loop
from harness.middleware import (
    client_tools,
    context_overrides,
    filesystem,
    human_in_the_loop,
    mcp,
    memory,
    prompt_cache,
    skills,
    subagent,
    summarization,
)
from harness.middleware.allowlist import ToolAllowlistMiddleware
from harness.middleware.repair_tool_calls import RepairToolCallsMiddleware
from harness.middleware.repeat_call import RepeatCallMiddleware
from harness.middleware.todo import TOOL_NAME as TODO_TOOL
from harness.middleware.todo import TodoMiddleware


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
        # MCP tools after the filesystem (their long results are offloaded like any tool's) and
        # before human_in_the_loop (a call sent before a crash is held there for a human).
        Slot(name="mcp", middleware=mcp.from_config(cfg), why=mcp.WHY),
        # Client tools with the other tool providers, before human_in_the_loop, which applies
        # the caller's results to their calls.
        Slot(name="client_tools", middleware=client_tools.from_config(cfg),
             why=client_tools.WHY),
        # Subagents next: the `task` tool wraps a whole child loop built from this same stack.
        Slot(name="subagent", middleware=subagent.from_config(cfg, child_loop_factory(cfg)),
             why=subagent.WHY),
        # Context overrides right before summarization, so compaction and the budget see the
        # filtered history (the context inspector).
        Slot(name="context_overrides", middleware=context_overrides.from_config(cfg),
             why=context_overrides.WHY),
        Slot(name="summarization", middleware=summarization.from_config(cfg),
             why=summarization.WHY),
        # Repair before anything reads the history as a sequence of call/result pairs.
        Slot(name="repair_tool_calls", middleware=RepairToolCallsMiddleware(),
             why="a history with unanswered tool calls is refused by providers"),
        # A middleware that exists only for a tool the agent may not call (and would prompt the
        # model to call it) is left out.
        Slot(name="todo", middleware=TodoMiddleware() if cfg.agent.allows(TODO_TOOL) else None,
             why="the plan: write_todos plus its rendering in the system prompt"
             if cfg.agent.allows(TODO_TOOL) else "skipped: write_todos is not in allowed_tools"),
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


def child_loop_factory(cfg: StackConfig) -> subagent.ChildLoopFactory:
    """How a subagent's loop is built: this same stack one level deeper, over the run's
    provider and tools. The child shares the session's files; the agent's memory, skills,
    session summary and context overrides belong to the parent's conversation."""

    def spawn(agent: AgentSpec) -> Loop:
        deps = cfg.deps
        if deps.provider is None:
            raise ConfigurationError("subagents need the run's provider (RunDeps.provider)")
        child = replace(cfg, agent=agent, capture_only=False,
                        subagent_depth=cfg.subagent_depth + 1,
                        deps=replace(deps, memory=None, skills=None, summaries=None,
                                     overrides=None, mcp=None, mcp_journal=None))
        return Loop(agent=agent, chain=Chain.build(default_stack(child)), provider=deps.provider,
                    model=deps.model, tools=[t for t in deps.tools if agent.allows(t.name)],
                    purpose=subagent.PURPOSE)

    return spawn


def default_stack(cfg: StackConfig) -> list[Middleware]:
    return [slot.middleware for slot in stack_slots(cfg) if slot.middleware is not None]
