"""harness.stack: the exact slot order, the built stack, and the tool order the provider sees."""

from __future__ import annotations

from harness import telemetry
from harness.chain import Chain
from harness.deps import StackConfig
from harness.middleware.allowlist import ToolAllowlistMiddleware
from harness.middleware.human_in_the_loop import HumanInTheLoopMiddleware
from harness.middleware.repair_tool_calls import RepairToolCallsMiddleware
from harness.middleware.repeat_call import RepeatCallMiddleware
from harness.middleware.todo import TodoMiddleware
from harness.providers.scripted import ScriptedModel, text
from harness.stack import default_stack, stack_slots
from tests.support.harness import SKILL_IDS, events_named, make_agent, make_loop, run

SLOTS = [
    "skills", "filesystem", "mcp", "client_tools", "subagent", "context_overrides", "summarization",
    "repair_tool_calls", "todo", "repeat_call", "prompt_cache", "memory",
    "human_in_the_loop", "tool_allowlist",
]
BUILT = {
    "repair_tool_calls": RepairToolCallsMiddleware,
    "todo": TodoMiddleware,
    "repeat_call": RepeatCallMiddleware,
    "human_in_the_loop": HumanInTheLoopMiddleware,
    "tool_allowlist": ToolAllowlistMiddleware,
}
STACK = ["repair_tool_calls", "todo", "repeat_call", "human_in_the_loop", "tool_allowlist"]


def config(**agent_fields) -> StackConfig:
    return StackConfig(agent=make_agent(**agent_fields))


def test_stack_slots_are_exactly_these_in_this_order():
    assert [slot.name for slot in stack_slots(config())] == SLOTS


def test_every_slot_has_a_reason_and_skipped_slots_say_so():
    for slot in stack_slots(config()):
        assert slot.why.strip(), slot.name
        if slot.name in BUILT:
            assert isinstance(slot.middleware, BUILT[slot.name])
            assert slot.middleware.name == slot.name
        else:
            assert slot.middleware is None, slot.name
            assert slot.why.startswith("skipped"), slot.name


def test_default_stack_names_in_order():
    stack = default_stack(config())
    assert [m.name for m in stack] == STACK
    assert Chain.build(stack).names == STACK


def test_allowlist_is_innermost_for_model_and_tool_calls():
    chain = Chain.build(default_stack(config()))
    assert chain.model_wrappers[-1].name == "tool_allowlist"
    assert chain.tool_wrappers[-1].name == "tool_allowlist"
    assert [m.name for m in chain.tool_wrappers] == [
        "repeat_call", "human_in_the_loop", "tool_allowlist"]


def test_config_reaches_the_middlewares():
    cfg = StackConfig(agent=make_agent(allowed_tools=("echo",)), repeat_call_threshold=5)
    by_name = {m.name: m for m in default_stack(cfg)}
    assert by_name["repeat_call"].threshold == 5
    assert by_name["tool_allowlist"].allowed == frozenset({"echo"})


def test_tool_order_presented_to_the_provider():
    model = ScriptedModel([text("hi")])
    run(make_loop(model, agent=make_agent(allowed_tools=None)))
    assert [t.name for t in model.calls[0].tools] == ["echo", "word_count", "write_todos"]


def test_invoke_agent_span_records_the_exact_stack(spans):
    run(make_loop(ScriptedModel([text("hi")])))
    (event,) = events_named(spans, telemetry.EVENT_MIDDLEWARE_STACK)
    assert list(event.attributes[telemetry.ATTR_MIDDLEWARE_STACK]) == STACK


def test_the_todo_slot_is_skipped_when_write_todos_is_not_allowed():
    from harness.agent import AgentSpec
    from harness.deps import StackConfig
    from harness.stack import default_stack, stack_slots

    agent = AgentSpec(id="a", name="a", model="scripted:demo", allowed_tools=("echo",))
    [todo] = [s for s in stack_slots(StackConfig(agent=agent)) if s.name == "todo"]
    assert todo.middleware is None and "allowed_tools" in todo.why
    assert "todo" not in [m.name for m in default_stack(StackConfig(agent=agent))]


class _Memory:
    def load(self):
        from harness.stores import MemoryFile

        return [MemoryFile(path="/memories/AGENTS.md", content="Remember: be brief.")]

    def write(self, path, content):
        raise AssertionError("not written in this test")


class _Skills:
    def load(self):
        from harness.stores import SkillSpec

        return [SkillSpec(id="s1", name="release", description="Cut a release.",
                          instructions="Tag, build, publish.", allowed_tools=None)]


class _Files:
    def list(self):
        return []

    def read(self, path):
        return None

    def write(self, path, content):
        pass


class _Summaries:
    def load(self):
        return None

    def save(self, summary):
        pass


def test_every_slot_built_in_order_and_the_system_blocks_follow_it():
    """With every store and option present, all slots but the inspector's are built, in the
    order of stack_slots; the system blocks follow chain order, and the cache breakpoint sits
    before the dynamic blocks (file listing, todo, memory)."""
    from harness.deps import RunDeps
    from harness.tools import builtin_registry

    model = ScriptedModel([text("hi")])
    deps = RunDeps(memory=_Memory(), skills=_Skills(), files=_Files(), summaries=_Summaries(),
                   provider=model, model="script", tools=tuple(builtin_registry().all()))
    agent = make_agent(config={
        "skills": [SKILL_IDS[0]], "memory": {"writable": True},
        "subagents": [{"name": "helper", "description": "Helps.", "system_prompt": "Help."}],
        "interrupt_on": {"echo": ["approve", "reject"]},
    })
    cfg = StackConfig(agent=agent, deps=deps)
    stack = default_stack(cfg)
    assert [m.name for m in stack] == [s.name for s in stack_slots(cfg) if s.middleware] == [
        "skills", "filesystem", "subagent", "summarization", "repair_tool_calls", "todo",
        "repeat_call", "prompt_cache", "memory", "human_in_the_loop", "tool_allowlist"]
    run(make_loop(model, agent=agent, middlewares=stack))
    sent = model.calls[0]
    marked = [i for i, b in enumerate(sent.system) if b.cache_control is not None]
    texts = [b.text for b in sent.system]
    assert texts[0] == agent.system_prompt
    memory_at = next(i for i, t in enumerate(texts) if "Remember: be brief." in t)
    todo_at = next(i for i, t in enumerate(texts) if "todo list" in t)
    # agent, skills index | file listing (dynamic), subagents, todo list, memory
    assert marked == [1] and "release" in texts[1]
    assert marked[0] < todo_at < memory_at
