"""Builders shared by the harness unit tests: agents, loops, tools, controls, spans."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from harness.agent import AgentConfig, AgentSpec
from harness.chain import Chain, Middleware
from harness.deltas import DeltaSink
from harness.deps import StackConfig
from harness.loop import Loop
from harness.messages import Message, Request, ToolUseBlock
from harness.providers.base import Provider
from harness.stack import default_stack
from harness.state import State
from harness.steps import NeverCancel, NextStep, TurnResult
from harness.tokens.base import Tokenizer
from harness.tools import Tool, ToolContext, builtin_registry

TEXT_SCHEMA = {
    "type": "object",
    "properties": {"text": {"type": "string"}},
    "required": ["text"],
    "additionalProperties": False,
}


# Skill ids as an agent's config names them: UUIDs. The skill stores of harness tests serve
# their skills whatever the ids.
SKILL_IDS = ("5d1f0a3c-2b4e-4c6d-8e7f-9a0b1c2d3e41", "5d1f0a3c-2b4e-4c6d-8e7f-9a0b1c2d3e42")


def make_agent(**overrides: Any) -> AgentSpec:
    """A test agent; ``config`` may be given as the JSON document the API stores."""
    fields: dict[str, Any] = {
        "id": "agent-1", "name": "tester", "model": "scripted:script",
        "system_prompt": "You are a test agent.",
    }
    if isinstance(overrides.get("config"), dict):
        overrides["config"] = AgentConfig.from_json(json.dumps(overrides["config"]))
    return AgentSpec(**{**fields, **overrides})


@dataclass
class CountingTool:
    """A tool whose every real call is recorded (so a test can prove it never ran)."""

    name: str = "counter"
    schema: dict[str, Any] = field(default_factory=lambda: {"type": "object"})
    answer: str = "counted"
    calls: list[dict[str, Any]] = field(default_factory=list)

    @property
    def tool(self) -> Tool:
        return Tool(name=self.name, description=f"The {self.name} test tool.",
                    input_schema=self.schema, fn=self._fn)

    def _fn(self, args: dict[str, Any], ctx: ToolContext) -> str:
        self.calls.append(args)
        return self.answer


def make_tool(name: str = "t", fn=lambda args, ctx: "ok", schema=None) -> Tool:
    """A tool answering ``fn(args, ctx)`` (``"ok"`` by default); any object is valid input
    unless ``schema`` says otherwise."""
    return Tool(name=name, description=f"{name} tool", input_schema=schema or {"type": "object"},
                fn=fn)


def tool_context() -> ToolContext:
    """A context for calling a tool directly (no loop)."""
    return ToolContext(state=State(), call=ToolUseBlock(id="t", name="x", input={}))


STOPPED = "stopped by the test"


@dataclass
class Recorder:
    """A Checkpointer keeping every TurnResult; ``keep_going`` False stops the loop (the loop
    then returns :data:`STOPPED`)."""

    keep_going: bool = True
    results: list[TurnResult] = field(default_factory=list)

    def checkpoint(self, state: State, result: TurnResult) -> str | None:
        self.results.append(result)
        return None if self.keep_going else STOPPED


@dataclass
class CancelAfter:
    """A Control that answers False ``checks`` times, then True for ever."""

    checks: int
    asked: int = 0

    def cancel_requested(self) -> bool:
        self.asked += 1
        return self.asked > self.checks


def make_loop(provider: Provider, *, agent: AgentSpec | None = None,
              middlewares: Sequence[Middleware] | None = None,
              tools: Sequence[Tool] | None = None, deltas: DeltaSink | None = None,
              prints: Tokenizer | None = None) -> Loop:
    """A loop over ``default_stack`` (or ``middlewares``) and the agent's built-in tools;
    ``deltas`` takes the text deltas of a provider that streams."""
    agent = agent or make_agent()
    if middlewares is None:
        middlewares = default_stack(StackConfig(agent=agent))
    if tools is None:
        tools = builtin_registry().view(agent.allowed_tools)
    return Loop(agent=agent, chain=Chain.build(middlewares), provider=provider,
                model="script", tools=tools, deltas=deltas, prints=prints)


def run(loop: Loop, state: State | None = None, *, control: Any = None,
        checkpointer: Recorder | None = None) -> tuple[NextStep | str, State, Recorder]:
    """Run ``loop`` to its end; returns the final step, the state and the checkpointer."""
    state = state if state is not None else State(messages=[Message.user("Please help.")])
    checkpointer = checkpointer or Recorder()
    step = loop.run(state, control=control or NeverCancel(), checkpointer=checkpointer)
    return step, state, checkpointer


@dataclass
class Deltas:
    """A DeltaSink keeping every delta as ``(turn, index, text)``, and each stream's end as
    ``(turn, count)``."""

    seen: list[tuple[int, int, str]] = field(default_factory=list)
    ends: list[tuple[int, int]] = field(default_factory=list)

    def delta(self, turn: int, index: int, text: str) -> None:
        self.seen.append((turn, index, text))

    def end(self, turn: int, count: int) -> None:
        self.ends.append((turn, count))

    def text_of(self, turn: int) -> str:
        return "".join(text for t, _, text in self.seen if t == turn)

    def turns(self) -> list[int]:
        return sorted({t for t, _, _ in self.seen})


class Counting:
    """A provider with only a token counter: it answers ``answer``, or raises it."""

    name = "counting"

    def __init__(self, answer: int | Exception) -> None:
        self.answer = answer

    def complete(self, request):  # pragma: no cover - never called
        raise AssertionError

    def count_tokens(self, request: Request) -> int:
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def spans_named(exporter: InMemorySpanExporter, name: str) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.name == name]


def events_named(exporter: InMemorySpanExporter, name: str) -> list[Event]:
    return [e for s in exporter.get_finished_spans() for e in s.events if e.name == name]


def all_texts(messages: Sequence[Message]) -> list[str]:
    """Every text and tool-result string in ``messages``."""
    out = []
    for message in messages:
        for block in message.content:
            if block.type == "text":
                out.append(block.text)
            elif block.type == "tool_result":
                out.append(block.content)
    return out
