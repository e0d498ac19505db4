"""harness.stack: the exact slot order, the built stack, and the tool order the provider sees."""

from __future__ import annotations

from harness import telemetry
from harness.chain import Chain
from harness.middleware.allowlist import ToolAllowlistMiddleware
from harness.middleware.repair_tool_calls import RepairToolCallsMiddleware
from harness.middleware.repeat_call import RepeatCallMiddleware
from harness.middleware.todo import TodoMiddleware
from harness.providers.scripted import ScriptedModel, text
from harness.stack import StackConfig, default_stack, stack_slots
from tests.harness.helpers import events_named, make_agent, make_loop, run

SLOTS = [
    "skills", "filesystem", "subagent", "context_overrides", "summarization",
    "repair_tool_calls", "todo", "repeat_call", "prompt_cache", "memory",
    "human_in_the_loop", "tool_allowlist",
]
BUILT = {
    "repair_tool_calls": RepairToolCallsMiddleware,
    "todo": TodoMiddleware,
    "repeat_call": RepeatCallMiddleware,
    "tool_allowlist": ToolAllowlistMiddleware,
}
STACK = ["repair_tool_calls", "todo", "repeat_call", "tool_allowlist"]


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
    assert [m.name for m in chain.tool_wrappers] == ["repeat_call", "tool_allowlist"]


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
    from harness.stack import StackConfig, default_stack, stack_slots

    agent = AgentSpec(id="a", name="a", model="scripted:demo", allowed_tools=("echo",))
    [todo] = [s for s in stack_slots(StackConfig(agent=agent)) if s.name == "todo"]
    assert todo.middleware is None and "allowed_tools" in todo.why
    assert "todo" not in [m.name for m in default_stack(StackConfig(agent=agent))]
