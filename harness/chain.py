"""The middleware chain: optional capability protocols, discovered once, composed as an onion.

``Middleware`` is a marker (it has a ``name``). What a middleware can do is found by type check
when the chain is built — never on each call — and kept in a list per capability. For model and
tool calls, index 0 is the outermost wrapper. System blocks are assembled on every model call,
in chain order after the agent's own block, each carrying its part id (:class:`SourcedBlock`);
the base model handler strips the provenance when it builds the provider request.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import cache
from typing import Any, Protocol, runtime_checkable

from harness import context, telemetry
from harness.agent import AgentSpec
from harness.approval_values import AwaitingApproval
from harness.context import AGENT_PART, SourcedBlock
from harness.errors import ConfigurationError
from harness.messages import Request, Response, TextBlock, ToolUseBlock
from harness.state import State
from harness.tools.base import Tool, ToolResult, never

log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class ModelRequest:
    """One model call as it travels through the onion. Wrappers change it with ``replace``."""

    # model, messages, max_tokens…; ``system`` and ``tools`` are filled in at the base handler
    request: Request
    system: tuple[SourcedBlock, ...]
    tools: tuple[Tool, ...]
    state: State
    agent: AgentSpec

    def to_provider_request(self) -> Request:
        return replace(
            self.request,
            system=tuple(sb.block for sb in self.system),
            tools=tuple(t.definition for t in self.tools),
        )


@dataclass(frozen=True, kw_only=True)
class ToolCallRequest:
    call: ToolUseBlock
    state: State
    tool: Tool | None  # None when the model named a tool it was not given
    # The names of the tools the model was offered (what an unknown tool's error lists).
    offered: tuple[str, ...] = ()
    # Whether the run has been asked to stop (a long tool, such as a subagent, checks it).
    cancel_requested: Callable[[], bool] = never


# What a tool call comes to: a result, or — when a human must decide first — no result yet.
ToolOutcome = ToolResult | AwaitingApproval
ModelHandler = Callable[[ModelRequest], Response]
ToolHandler = Callable[[ToolCallRequest], ToolOutcome]


@runtime_checkable
class Middleware(Protocol):
    name: str


@runtime_checkable
class ModelWrapper(Protocol):
    def wrap_model_call(self, req: ModelRequest, next: ModelHandler) -> Response: ...


@runtime_checkable
class ToolWrapper(Protocol):
    def wrap_tool_call(self, req: ToolCallRequest, next: ToolHandler) -> ToolOutcome: ...


@runtime_checkable
class RunHook(Protocol):
    def before_run(self, state: State) -> None: ...


@runtime_checkable
class BatchGate(Protocol):
    def checkpoints_before(self, calls: Sequence[ToolUseBlock]) -> bool:
        """Whether the batch of ``calls`` must be checkpointed before any of them runs: a call
        whose side effects must not be repeated blindly if its worker dies before the turn's
        commit (a new model call would make it again under another id)."""
        ...


@runtime_checkable
class Closer(Protocol):
    def close(self) -> None:
        """Let go of what the middleware holds for the run (its open sessions); the loop's
        end, whatever it was."""
        ...


@runtime_checkable
class ToolProvider(Protocol):
    def provide_tools(self, state: State) -> list[Tool]: ...


@runtime_checkable
class PromptContributor(Protocol):
    def system_blocks(self, state: State) -> list[SourcedBlock]: ...


class NamedRunHook(Middleware, RunHook, Protocol):
    """A run hook as the chain holds it: ``before_run`` spans carry its name."""


_HOOKS = (ModelWrapper, ToolWrapper, RunHook, ToolProvider, PromptContributor, BatchGate, Closer)


@cache
def _hooks_of(cls: type) -> frozenset[type]:
    """The hooks a middleware class implements (its methods, not instance attributes), found
    once per class: a check against a runtime protocol walks its members every time, and every
    run and inspection builds a chain (0.2–0.6 ms of checks per chain before)."""
    return frozenset(hook for hook in _HOOKS if issubclass(cls, hook))


def _with(middlewares: Sequence[Middleware], hook: Any) -> list[Any]:
    """The middlewares implementing ``hook`` (a protocol, which mypy will not take as a type
    argument: the caller annotates the list)."""
    return [m for m in middlewares if hook in _hooks_of(type(m))]


class Chain:
    """Built once per run from the ordered list :func:`harness.stack.default_stack` returns."""

    def __init__(self, middlewares: Sequence[Middleware]) -> None:
        names = [m.name for m in middlewares]
        if len(names) != len(set(names)):
            raise ConfigurationError(f"middleware names must be unique: {names}")
        self.middlewares = tuple(middlewares)
        self.model_wrappers: list[ModelWrapper] = _with(middlewares, ModelWrapper)
        self.tool_wrappers: list[ToolWrapper] = _with(middlewares, ToolWrapper)
        self.run_hooks: list[NamedRunHook] = _with(middlewares, RunHook)
        self.tool_providers: list[ToolProvider] = _with(middlewares, ToolProvider)
        self.contributors: list[PromptContributor] = _with(middlewares, PromptContributor)
        self.gates: list[BatchGate] = _with(middlewares, BatchGate)
        self.closers: list[Closer] = _with(middlewares, Closer)

    @classmethod
    def build(cls, middlewares: Sequence[Middleware]) -> Chain:
        return cls(middlewares)

    @property
    def names(self) -> list[str]:
        return [m.name for m in self.middlewares]

    def before_run(self, state: State) -> None:
        """Every RunHook once, in order, under one ``agent.before_run`` span with a child each."""
        with telemetry.span(telemetry.SPAN_BEFORE_RUN):
            for hook in self.run_hooks:
                name = hook.name
                attrs = {telemetry.ATTR_MIDDLEWARE_NAME: name}
                started = time.perf_counter()
                with telemetry.span(f"{telemetry.SPAN_BEFORE_RUN}.{name}", attrs):
                    hook.before_run(state)
                telemetry.before_run_duration.record(time.perf_counter() - started, attrs)

    def system_blocks(self, agent: AgentSpec, state: State) -> list[SourcedBlock]:
        """The agent's block, each contributor's in chain order, then the run's system
        overrides: an excluded part is dropped (and kept in the batch's ``Applied`` record), a
        replaced one sent with the replacement text. Before any wrapper runs, so the prompt
        cache's breakpoint lands on a block that is actually sent."""
        blocks = []
        if agent.system_prompt:
            blocks.append(SourcedBlock(part=AGENT_PART, block=TextBlock(text=agent.system_prompt)))
        for contributor in self.contributors:
            blocks.extend(contributor.system_blocks(state))
        overrides = context.active(state)
        if not overrides:
            return blocks
        kept, excluded = context.apply_system(blocks, overrides)
        context.applied(state, fresh=True).system.extend(excluded)
        return kept

    def tools(self, state: State, base: Sequence[Tool]) -> list[Tool]:
        """The base tools, then each provider's, in chain order; the first of a name wins."""
        seen: dict[str, Tool] = {t.name: t for t in base}
        for provider in self.tool_providers:
            for tool in provider.provide_tools(state):
                seen.setdefault(tool.name, tool)
        return list(seen.values())

    def checkpoints_before(self, calls: Sequence[ToolUseBlock]) -> bool:
        """Whether any gate wants the batch of ``calls`` checkpointed before it runs."""
        return any(gate.checkpoints_before(calls) for gate in self.gates)

    def close(self) -> None:
        """Every closer, in reverse chain order; one that fails does not stop the others."""
        for closer in reversed(self.closers):
            try:
                closer.close()
            except Exception:  # noqa: BLE001 (closing must reach every middleware)
                log.warning("closing %s failed", type(closer).__name__, exc_info=True)

    def model_call(self, req: ModelRequest, base: ModelHandler) -> Response:
        handler = base
        for wrapper in reversed(self.model_wrappers):
            handler = _bind_model(wrapper, handler)
        return handler(req)

    def tool_call(self, req: ToolCallRequest, base: ToolHandler) -> ToolOutcome:
        handler = base
        for wrapper in reversed(self.tool_wrappers):
            handler = _bind_tool(wrapper, handler)
        return handler(req)


def _bind_model(wrapper: ModelWrapper, next_handler: ModelHandler) -> ModelHandler:
    return lambda req: wrapper.wrap_model_call(req, next_handler)


def _bind_tool(wrapper: ToolWrapper, next_handler: ToolHandler) -> ToolHandler:
    return lambda req: wrapper.wrap_tool_call(req, next_handler)
