"""PromptCacheMiddleware: the breakpoint index, the cache tokens, and adapters that ignore it."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from harness import telemetry
from harness.context import SourcedBlock
from harness.deps import RunDeps, StackConfig
from harness.messages import CacheControl, Message, Request, TextBlock, Usage
from harness.middleware import prompt_cache
from harness.middleware.prompt_cache import (
    PromptCacheMiddleware,
    PromptCacheReport,
    breakpoint_index,
)
from harness.middleware.todo import TodoMiddleware
from harness.providers import anthropic, openai_chat
from harness.providers.models import cache_minimum
from harness.providers.scripted import ScriptedModel, text
from harness.stack import default_stack
from harness.state import State, state_to_json
from harness.tokens.tokenizers import tokenizer_for
from tests.support.doubles import Contributes
from tests.support.harness import make_agent, make_loop, run

MEMORY = "system:memory:/memories/AGENTS.md"


class FakeMemory:
    """A contributor like MemoryMiddleware: one block per memory file, after the cache slot."""

    name = "memory"

    def system_blocks(self, state: State) -> list[SourcedBlock]:
        return [SourcedBlock(part=MEMORY, block=TextBlock(text="The user prefers metric units.")),
                SourcedBlock(part="system:memory:/memories/notes.md",
                             block=TextBlock(text="Deploys happen on Tuesdays."))]


def blocks(*parts: str) -> list[SourcedBlock]:
    return [SourcedBlock(part=p, block=TextBlock(text=p)) for p in parts]


@pytest.mark.parametrize(("parts", "index"), [
    (["system:agent", "system:skills", "system:todo", MEMORY], 1),
    (["system:agent", "system:skills", MEMORY, "system:todo"], 1),
    (["system:agent", MEMORY], 0),
    (["system:agent", "system:skills", "system:subagent"], 2),  # nothing dynamic: the last
    (["system:agent", "system:skills", "system:filesystem", "system:todo"], 1),  # file listing
    (["system:todo", "system:agent"], None),  # nothing stable before the first dynamic block
    ([], None),
])
def test_the_breakpoint_is_the_last_block_before_the_first_dynamic_one(parts, index):
    assert breakpoint_index(blocks(*parts)) == index


class Reports:
    """Outermost: keeps the prompt-cache report of each model call once it has returned."""

    name = "reports"

    def __init__(self) -> None:
        self.seen: list[PromptCacheReport | None] = []

    def wrap_model_call(self, req, next):
        response = next(req)
        self.seen.append(prompt_cache.report(req.state))
        return response


def run_chain(usage: Usage | None = None, *, cache: PromptCacheMiddleware | None = None,
              skills: str = "You have these skills: none.",
              ) -> tuple[Request, PromptCacheReport, State]:
    model = ScriptedModel([replace(text("hi"), usage=usage or Usage())])
    probe = Reports()
    middlewares = [probe, Contributes("skills", skills), TodoMiddleware(),
                   cache or PromptCacheMiddleware(), FakeMemory()]
    _, state, _ = run(make_loop(model, middlewares=middlewares),
                      State(messages=[Message.user("hello")]))
    (report,) = probe.seen
    return model.calls[0], report, state


def test_the_mark_lands_on_the_last_stable_block_and_memory_sits_after_it():
    request, st, _ = run_chain()
    assert st.breakpoint == 1 and st.part == "system:skills"
    marks = [b.cache_control for b in request.system]
    assert marks == [None, CacheControl(), None, None, None]
    texts = [b.text for b in request.system]
    assert texts[0] == "You are a test agent." and texts[1] == "You have these skills: none."
    assert texts[2].startswith("Your todo list is empty")
    assert texts[3:] == ["The user prefers metric units.", "Deploys happen on Tuesdays."]


def test_cache_tokens_are_reported_and_the_read_ratio_recorded(monkeypatch):
    ratios: list[float] = []

    class Histogram:
        def record(self, value, attributes=None):
            ratios.append(value)

    monkeypatch.setattr(telemetry, "cache_read_ratio", Histogram())
    _, st, state = run_chain(Usage(input_tokens=100, output_tokens=5, cache_read_tokens=800,
                                   cache_write_tokens=100))
    assert (st.cache_read_tokens, st.cache_write_tokens) == (800, 100)
    assert ratios == [pytest.approx(0.8)]
    # Per-batch facts: gone with the batch's scratch, never written to state_json.
    assert prompt_cache.report(state) is None
    assert "prompt_cache" not in state_to_json(state)["private"]


def test_the_slot_is_built_for_runs_and_inspection_only():
    agent = make_agent()
    assert prompt_cache.from_config(StackConfig(agent=agent)) is None
    with_provider = StackConfig(agent=agent, deps=RunDeps(provider=ScriptedModel()))
    assert isinstance(prompt_cache.from_config(with_provider), PromptCacheMiddleware)
    assert prompt_cache.from_config(StackConfig(agent=agent, capture_only=True)) is not None
    names = [m.name for m in default_stack(with_provider)]
    assert names.index("todo") < names.index("prompt_cache")


CLAUDE = "anthropic:claude-sonnet-4-5-20250929"


def claude_cache() -> PromptCacheMiddleware:
    middleware = prompt_cache.from_config(StackConfig(
        agent=make_agent(model=CLAUDE), deps=RunDeps(tokenizer=tokenizer_for(CLAUDE)),
        capture_only=True))
    assert middleware is not None and middleware.minimum == 1_024
    return middleware


def test_a_prefix_below_the_models_minimum_is_not_marked():
    request, st, _ = run_chain(cache=claude_cache())
    assert all(b.cache_control is None for b in request.system)
    assert (st.breakpoint, st.part, st.minimum) == (None, None, 1_024)
    tokenizer = tokenizer_for(CLAUDE)
    # The tools (three, with Claude's tool-use preamble), the agent's prompt and the
    # skills index, framed as a request of their own.
    assert [t.name for t in request.tools] == ["echo", "word_count", "write_todos"]
    expected = tokenizer.request(replace(request, system=request.system[:2], messages=()))
    assert st.prefix_tokens == expected and 346 < expected < 1_024


def test_a_prefix_that_reaches_the_minimum_is_marked_where_it_was():
    long_index = "You have these skills: " + ", ".join(f"skill number {n}" for n in range(400))
    request, st, _ = run_chain(cache=claude_cache(), skills=long_index)
    assert st.prefix_tokens is not None and st.prefix_tokens >= 1_024
    assert (st.breakpoint, st.part) == (1, "system:skills")
    assert [b.cache_control is not None for b in request.system] == [False, True, False, False,
                                                                     False]


def test_a_model_with_no_known_minimum_is_marked_as_before():
    _, st, _ = run_chain()
    assert (st.breakpoint, st.minimum, st.prefix_tokens) == (1, None, None)


@pytest.mark.parametrize(("model", "minimum"), [
    ("anthropic:claude-3-5-haiku-20241022", 2_048),
    ("anthropic:claude-3-7-sonnet-20250219", 1_024),
    ("anthropic:claude-haiku-4-5", 4_096),
    ("anthropic:claude-opus-4-1-20250805", 1_024),
    ("anthropic:claude-opus-4-5-20251101", 4_096),
    ("anthropic:claude-opus-5", 512),
    ("openai:gpt-4o-2024-08-06", 1_024),
    ("scripted:demo", None),
])
def test_the_minimum_is_the_models_familys(model, minimum):
    assert cache_minimum(model) == minimum


MARKED = Request(model="m", system=(TextBlock(text="stable"),
                                    TextBlock(text="todo", cache_control=CacheControl())),
                 messages=(Message.user("hi"),))


def test_the_anthropic_adapter_sends_the_mark():
    wire = anthropic._map_request(MARKED)
    assert wire["system"][1] == {"type": "text", "text": "todo",
                                 "cache_control": {"type": "ephemeral"}}
    assert "cache_control" not in wire["system"][0]


def test_the_openai_adapter_ignores_the_mark():
    wire = openai_chat.map_request(MARKED)
    assert "cache_control" not in json.dumps(wire)
    assert wire["messages"][0] == {"role": "system", "content": "stable\n\ntodo"}
