"""SubagentMiddleware: the ``task`` tool, which hands work to a named subagent.

The agent's config declares subagents (``name``, ``description``, ``system_prompt``, ``tools``).
``task(subagent, description)`` runs one in its own loop over its own chain, with a fresh state
holding only the task description. The stack hands this middleware a factory for that loop
(:func:`harness.stack.child_loop_factory`: the same stack one level deeper), so the middleware
never imports its assembler. The child's final answer is the tool result and nothing else of it
(messages, todos, private state, events) reaches the parent. Every child model call is
recorded on the parent's state with purpose ``subagent`` as soon as it ends (the parent's ledger
writes it then, :mod:`harness.ledger`), a call of the parent's turn under way.

Limits: a child may use only tools the parent may use (the subagent's ``tools`` intersected with
the parent's allowlist; tools that need a human's approval are left out, since a child cannot
pause); nesting stops at ``max_depth``; a child stops after ``max_turns``; cancelling the parent
cancels the child at its next turn boundary or tool call. The slot sits right after the
filesystem, so a long subagent answer is offloaded like any other large result, and the child
shares the session's files (the way a subagent hands back a big artefact).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from harness import context, telemetry
from harness.agent import AgentConfig, AgentSpec, SubagentSpec
from harness.context import SourcedBlock
from harness.deps import SUBAGENT_MAX_DEPTH, SUBAGENT_MAX_TURNS, StackConfig
from harness.errors import ConfigurationError
from harness.loop import Loop
from harness.messages import Message, ModelUsage, TextBlock
from harness.state import State
from harness.steps import Failed, FinalOutput, Interrupted, NextStep, TurnResult
from harness.tools.base import Tool, ToolContext, ToolResult, tool_error

# Builds the loop a subagent runs in, for the child agent given (harness.stack provides it).
ChildLoopFactory = Callable[[AgentSpec], Loop]

NAME = "subagent"
PART = "system:subagent"
TOOL_NAME = "task"
PURPOSE = "subagent"
MAX_DESCRIPTION_CHARS = 20_000
WHY = ("skipped unless the agent's config declares subagents, task is allowed and the depth "
       "limit is not reached; the task tool runs a subagent in its own loop and chain")

DESCRIPTION = """Hand a self-contained task to one of your subagents. It works alone, in its \
own context: it sees only the description you write (not this conversation), uses its own \
tools, and returns only its final answer. Use it for a focused piece of work whose details \
you do not need to keep, such as research or a draft. Write a complete description: the goal, \
what you already know, and what to return. Files it writes are in the session's filesystem."""


class _ParentControl:
    """The child's Control: the parent's cancel flag, as the running tool sees it."""

    def __init__(self, cancel_requested: Callable[[], bool]) -> None:
        self.cancel_requested = cancel_requested


class _ToParent:
    """The child's Ledger: each of its calls is the parent's, recorded as it ends."""

    def __init__(self, parent: State) -> None:
        self.parent = parent

    def record(self, call: ModelUsage, *, turn: int) -> None:
        self.parent.record_usage(replace(call, purpose=PURPOSE))


class _NothingKept:
    """The child's Checkpointer: nothing is persisted (its calls went to the parent already)."""

    def checkpoint(self, state: State, result: TurnResult) -> None:
        return None


class SubagentMiddleware:
    name = NAME

    def __init__(self, *, subagents: Sequence[SubagentSpec], parent: AgentSpec,
                 spawn: ChildLoopFactory, depth: int = 0, max_depth: int = SUBAGENT_MAX_DEPTH,
                 max_turns: int = SUBAGENT_MAX_TURNS, capture_only: bool = False) -> None:
        if not subagents:
            raise ValueError("subagents must name at least one subagent")
        if not isinstance(max_depth, int) or max_depth < 1:
            raise ValueError("max_depth must be a positive integer")
        if not isinstance(max_turns, int) or max_turns < 1:
            raise ValueError("max_turns must be a positive integer")
        if depth >= max_depth:
            raise ConfigurationError(
                f"a subagent at depth {depth} may not start subagents (max depth {max_depth})")
        self.subagents = {s.name: s for s in subagents}
        if len(self.subagents) != len(subagents):
            raise ValueError("subagent names must be unique")
        self.parent = parent
        self.spawn = spawn
        self.depth = depth
        self.max_depth = max_depth
        self.max_turns = max_turns
        self.capture_only = capture_only
        self._tool = Tool(name=TOOL_NAME, description=DESCRIPTION, input_schema={
            "type": "object",
            "properties": {
                "subagent": {"enum": list(self.subagents), "description": "Which subagent."},
                "description": {"type": "string", "minLength": 1,
                                "maxLength": MAX_DESCRIPTION_CHARS,
                                "description": "The whole task, self-contained."},
            },
            "required": ["subagent", "description"],
            "additionalProperties": False,
        }, fn=self._task)

    def provide_tools(self, state: State) -> list[Tool]:
        return [self._tool]

    def system_blocks(self, state: State) -> list[SourcedBlock]:
        lines = ["Subagents you can hand a task to with the task tool (each returns only its "
                 "final answer):"]
        lines += [f"- {s.name}: {s.description}" for s in self.subagents.values()]
        return [SourcedBlock(part=PART, block=TextBlock(text="\n".join(lines)))]

    # -- the child ---------------------------------------------------------------------------

    def child_agent(self, spec: SubagentSpec) -> AgentSpec:
        """The subagent as an agent: its prompt, its tools within the parent's, its limits."""
        parent = self.parent
        allowed = parent.allowed_tools
        if spec.tools is not None:
            allowed = spec.tools if allowed is None else tuple(
                t for t in spec.tools if t in allowed)
        interrupt_on = parent.config.interrupt_on
        if allowed is not None:  # a child cannot wait for a human: leave those tools out
            allowed = tuple(t for t in allowed if t not in interrupt_on)
        # …and where the list is open, such calls are refused (see _answer). Deeper subagents
        # only while the depth limit allows them.
        deeper = self.depth + 1 < self.max_depth
        # The parent's model settings, but a tool choice that forces a call: the child may not
        # have the tool, and must be able to answer.
        own = parent.config.model_settings
        if own.tool_choice is not None and own.tool_choice not in ("auto", "none"):
            own = own.model_copy(update={"tool_choice": None})
        config = AgentConfig(interrupt_on=interrupt_on, model_settings=own,
                             subagents=parent.config.subagents if deeper else ())
        return AgentSpec(id=f"{parent.id}/{spec.name}", name=spec.name, model=parent.model,
                         system_prompt=spec.system_prompt, allowed_tools=allowed,
                         config=config, server_window=parent.server_window,
                         default_max_turns=self.max_turns)

    def _task(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        spec = self.subagents[args["subagent"]]
        if self.capture_only:
            return tool_error("Subagents do not run while the context is being inspected.")
        loop = self.spawn(self.child_agent(spec))
        parent = ctx.state
        state = State(run_id=parent.run_id, session_id=parent.session_id,
                      agent_id=parent.agent_id, tenant_id=parent.tenant_id,
                      trace_content=parent.trace_content, ledger=_ToParent(parent),
                      messages=[Message.user(args["description"])])
        # A tool the user excluded from the agent is not the subagent's either: the child's
        # allowlist slot drops it, as the parent's does.
        if tools := context.active(parent).excluded("tool"):
            context.set_active(state, context.OverrideSet(overrides=tuple(
                context.Override(part=p, action="exclude") for p in tools)))
        step = loop.run(state, control=_ParentControl(ctx.cancel_requested),
                        checkpointer=_NothingKept())
        telemetry.record_event(telemetry.EVENT_SUBAGENT_FINISHED, {
            telemetry.ATTR_SUBAGENT_NAME: spec.name, telemetry.ATTR_TURN: state.turn,
            telemetry.ATTR_STOP: type(step).__name__,
        })
        return _answer(spec, step, state)


def _answer(spec: SubagentSpec, step: NextStep, state: State) -> ToolResult:
    """The child's final answer, or an error saying why there is none."""
    match step:
        case FinalOutput(stop_reason=reason):
            answer = state.messages[-1].text.strip() if state.messages else ""
            if not answer:
                return tool_error(f"The subagent {spec.name!r} finished without an answer.")
            if reason == "max_tokens":
                answer += "\n[The subagent's answer was cut off at its output token limit.]"
            return ToolResult(content=answer)
        case Failed(code="max_turns"):
            return tool_error(f"The subagent {spec.name!r} stopped after {state.turn} turns, its "
                              "limit, without a final answer. Give it a smaller task.")
        case Failed(message=message):
            return tool_error(f"The subagent {spec.name!r} failed: {message}")
        case Interrupted(reason="cancelled"):
            return tool_error(f"The subagent {spec.name!r} was stopped: the run was cancelled.")
        case Interrupted(reason="paused"):
            names = ", ".join(p.name for p in state.pending_batch.pending) \
                if state.pending_batch else "a tool"
            return tool_error(f"The subagent {spec.name!r} tried to call {names}, which needs a "
                              "human's approval; subagents cannot wait for one. Call it "
                              "yourself if it is needed.")
    return tool_error(f"The subagent {spec.name!r} stopped unexpectedly.")


def from_config(cfg: StackConfig, spawn: ChildLoopFactory) -> SubagentMiddleware | None:
    specs = cfg.agent.config.subagents
    if not specs or not cfg.agent.allows(TOOL_NAME) \
            or cfg.subagent_depth >= cfg.deps.subagent_max_depth:
        return None
    return SubagentMiddleware(subagents=specs, parent=cfg.agent, spawn=spawn,
                              depth=cfg.subagent_depth, max_depth=cfg.deps.subagent_max_depth,
                              max_turns=cfg.deps.subagent_max_turns,
                              capture_only=cfg.capture_only)
