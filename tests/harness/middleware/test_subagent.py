"""SubagentMiddleware: the task tool runs a subagent in its own loop and chain and returns only its
final answer; usage purpose ``subagent``; depth and turn limits; cancellation; tools within the
parent's allowlist; nothing of the child leaks into the parent."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness import telemetry
from harness.agent import AgentConfig, SubagentSpec
from harness.deps import RunDeps, StackConfig
from harness.errors import ConfigurationError
from harness.messages import Message, Response, ToolUseBlock, Usage
from harness.middleware import subagent
from harness.middleware.subagent import PART, SubagentMiddleware
from harness.providers.scripted import ScriptedModel, text, tool_call
from harness.stack import child_loop_factory, default_stack, stack_slots
from harness.state import State
from harness.steps import FinalOutput, Interrupted
from harness.tools import Tool, ToolContext, builtin_registry
from tests.support.files import MemoryFiles
from tests.support.harness import (
    CancelAfter,
    CountingTool,
    all_texts,
    events_named,
    make_agent,
    make_loop,
    run,
    spans_named,
)

RESEARCHER = {"name": "researcher", "description": "Finds facts.",
              "system_prompt": "You research.", "tools": ["echo"]}


def task(description: str = "Find X.", name: str = "researcher", call_id: str = "t1") -> Response:
    return tool_call("task", {"subagent": name, "description": description}, call_id=call_id)


def parent_loop(model: ScriptedModel, *, subagents: list[dict[str, Any]] | None = None,
                allowed_tools: tuple[str, ...] | None = None, extra_tools: tuple[Tool, ...] = (),
                interrupt_on: dict[str, list[str]] | None = None, **deps: Any):
    config: dict[str, Any] = {"subagents": subagents or [RESEARCHER]}
    if interrupt_on:
        config["interrupt_on"] = interrupt_on
    agent = make_agent(allowed_tools=allowed_tools, config=config)
    every_tool = tuple(builtin_registry().all()) + extra_tools
    cfg = StackConfig(agent=agent, deps=RunDeps(provider=model, model="script", tools=every_tool,
                                                **deps))
    tools = [t for t in every_tool if allowed_tools is None or t.name in allowed_tools]
    return make_loop(model, agent=agent, middlewares=default_stack(cfg), tools=tools)


def specs(subagents: list[dict[str, Any]]) -> tuple[SubagentSpec, ...]:
    """The subagents of an agent config document, as the agent's parsed config holds them."""
    return AgentConfig.from_json(json.dumps({"subagents": subagents})).subagents


def from_config(cfg: StackConfig) -> SubagentMiddleware | None:
    return subagent.from_config(cfg, child_loop_factory(cfg))


def names(request) -> list[str]:
    return [t.name for t in request.tools]


def result_of(state: State, index: int = 2):
    (block,) = state.messages[index].tool_results
    return block


def test_task_runs_the_subagent_and_returns_only_its_final_answer(spans):
    model = ScriptedModel([
        task(),
        tool_call("echo", {"text": "looking"}, call_id="e1"),
        text("X is 42."),
        text("Done: X is 42."),
    ])
    step, state, _ = run(parent_loop(model))
    assert step == FinalOutput("end_turn")
    assert len(state.messages) == 4
    result = result_of(state)
    assert (result.content, result.is_error) == ("X is 42.", False)
    assert "looking" not in all_texts(state.messages)
    assert not any(u.name == "echo" for m in state.messages for u in m.tool_uses)
    parent_call, child_first, child_second, _ = model.calls
    assert "task" in names(parent_call)
    # The child: its own prompt and tools, and only the description as its history.
    assert child_first.system[0].text == "You research."
    assert names(child_first) == ["echo"]
    assert [m.text for m in child_first.messages] == ["Find X."]
    assert len(child_second.messages) == 3
    (finished,) = events_named(spans, telemetry.EVENT_SUBAGENT_FINISHED)
    assert finished.attributes[telemetry.ATTR_SUBAGENT_NAME] == "researcher"
    assert finished.attributes[telemetry.ATTR_TURN] == 2
    # The child's invoke_agent span sits inside the parent's execute_tool span.
    outer, inner = sorted(spans_named(spans, telemetry.SPAN_INVOKE_AGENT),
                          key=lambda s: s.start_time)
    tool_span = next(s for s in spans_named(spans, telemetry.SPAN_EXECUTE_TOOL)
                     if s.context.span_id == inner.parent.span_id)
    assert tool_span.attributes[telemetry.ATTR_GEN_AI_TOOL_NAME] == "task"
    assert inner.attributes[telemetry.ATTR_GEN_AI_AGENT_NAME] == "researcher"


def test_child_usage_is_recorded_on_the_parent_under_purpose_subagent():
    def used(n: int, step: Response) -> Response:
        return Response(message=step.message, stop_reason=step.stop_reason,
                        usage=Usage(input_tokens=n, output_tokens=1))

    model = ScriptedModel([
        used(10, task()),
        used(1000, tool_call("echo", {"text": "a"}, call_id="e1")),
        used(2000, text("answer")),
        used(20, text("done")),
    ])
    _, _, recorder = run(parent_loop(model))
    first, second = recorder.results
    assert [(u.purpose, u.usage.input_tokens) for u in first.usage] == [
        ("run", 10), ("subagent", 1000), ("subagent", 2000)]
    assert {(u.provider, u.model) for u in first.usage} == {("scripted", "script")}
    assert [(u.purpose, u.usage.input_tokens) for u in second.usage] == [("run", 20)]


def test_the_child_never_gets_a_tool_the_parent_may_not_use():
    secret = CountingTool(name="secret")
    model = ScriptedModel([
        task(),
        tool_call("secret", {}, call_id="s1"),
        text("could not"),
        text("ok"),
    ])
    sub = {**RESEARCHER, "tools": ["echo", "secret", "word_count", "write_todos"]}
    _, state, _ = run(parent_loop(model, subagents=[sub], allowed_tools=("task", "echo"),
                                  extra_tools=(secret.tool,)))
    assert names(model.calls[0]) == ["echo", "task"]
    assert names(model.calls[1]) == ["echo"]
    assert secret.calls == []
    refused = model.calls[2].messages[-1].tool_results[0]
    assert refused.is_error and "secret" in refused.content
    assert result_of(state).content == "could not"


def test_a_subagent_without_tools_inherits_the_parents_allowlist():
    model = ScriptedModel([task(), text("inherited"), text("ok")])
    sub = {k: v for k, v in RESEARCHER.items() if k != "tools"}
    run(parent_loop(model, subagents=[sub], allowed_tools=("task", "word_count")))
    assert names(model.calls[1]) == ["word_count"]


def test_tools_that_need_approval_are_left_out_of_the_child():
    model = ScriptedModel([task(), text("fine"), text("ok")])
    sub = {**RESEARCHER, "tools": ["echo", "word_count"]}
    run(parent_loop(model, subagents=[sub], interrupt_on={"echo": ["approve"]}))
    assert names(model.calls[1]) == ["word_count"]


def test_a_child_call_that_needs_approval_ends_the_task_with_an_error():
    model = ScriptedModel([task(), tool_call("echo", {"text": "hi"}, call_id="e1"), text("ok")])
    sub = {k: v for k, v in RESEARCHER.items() if k != "tools"}
    loop = parent_loop(model, subagents=[sub], interrupt_on={"echo": ["approve"]})
    step, state, _ = run(loop)
    assert step == FinalOutput("end_turn")
    assert len(model.calls) == 3  # parent, the child's echo call (paused, never run), parent
    result = result_of(state)
    assert result.is_error and "echo, which needs a human's approval" in result.content
    assert state.pending_batch is None


def test_subagents_do_not_nest_past_the_depth_limit():
    model = ScriptedModel([task(), text("leaf"), text("ok")])
    sub = {**RESEARCHER, "tools": ["echo", "task"]}
    run(parent_loop(model, subagents=[sub]))
    assert names(model.calls[1]) == ["echo"]  # no task tool at depth 1
    agent = make_agent(config={"subagents": [sub]})
    deep = StackConfig(agent=agent, subagent_depth=1)
    assert from_config(deep) is None
    (slot,) = [s for s in stack_slots(deep) if s.name == "subagent"]
    assert slot.middleware is None and slot.why.startswith("skipped")
    with pytest.raises(ConfigurationError, match="depth 1"):
        SubagentMiddleware(subagents=specs([sub]), parent=agent, spawn=child_loop_factory(deep),
                           depth=deep.subagent_depth)


def test_a_deeper_limit_allows_one_more_level_and_no_more():
    model = ScriptedModel([
        task("level 1"),
        task("level 2", call_id="t2"),
        text("deepest"),
        text("middle: deepest"),
        text("top"),
    ])
    sub = {**RESEARCHER, "tools": ["echo", "task"]}
    _, state, _ = run(parent_loop(model, subagents=[sub], subagent_max_depth=2))
    assert names(model.calls[1]) == ["echo", "task"]
    assert names(model.calls[2]) == ["echo"]
    assert [m.text for m in model.calls[2].messages] == ["level 2"]
    assert result_of(state).content == "middle: deepest"


def test_the_child_stops_at_its_turn_limit():
    model = ScriptedModel([
        task(),
        tool_call("echo", {"text": "1"}, call_id="e1"),
        tool_call("echo", {"text": "2"}, call_id="e2"),
        text("parent goes on"),
    ])
    _, state, recorder = run(parent_loop(model, subagent_max_turns=2))
    result = result_of(state)
    assert result.is_error and "stopped after 2 turns" in result.content
    assert [u.purpose for u in recorder.results[0].usage] == ["run", "subagent", "subagent"]
    assert state.messages[-1].text == "parent goes on"


def test_cancelling_the_parent_stops_the_child():
    probe = CountingTool(name="probe")
    model = ScriptedModel([
        task(),
        tool_call("probe", {}, call_id="p1"),
        text("never reached"),
    ])
    sub = {**RESEARCHER, "tools": ["probe"]}
    loop = parent_loop(model, subagents=[sub], extra_tools=(probe.tool,))
    # Checks: parent turn 1, parent before task, child turn 1 — then the child's tool call sees
    # the cancel.
    control = CancelAfter(checks=3)
    step, state, _ = run(loop, control=control)
    assert step == Interrupted("cancelled")
    assert probe.calls == [] and len(model.calls) == 2
    result = result_of(state)
    assert result.is_error and "the run was cancelled" in result.content


def test_nothing_of_the_child_leaks_into_the_parent():
    files = MemoryFiles()
    plan = {"todos": [{"content": "child step", "status": "in_progress"}]}
    model = ScriptedModel([
        task(),
        tool_call("write_todos", plan, call_id="w1"),
        tool_call("write_file", {"path": "/report.md", "content": "# Report"}, call_id="f1"),
        text("wrote /report.md"),
        text("ok"),
    ])
    sub = {**RESEARCHER, "tools": ["write_todos", "write_file"]}
    _, state, recorder = run(parent_loop(model, subagents=[sub], files=files))
    assert state.todos == []
    assert all(t != "todos.updated" for r in recorder.results for t, _ in r.events)
    assert [m.role for m in state.messages] == ["user", "assistant", "user", "assistant"]
    # …but the session's files are shared: that is how a subagent hands back an artefact.
    assert files.files == {"/report.md": "# Report"}


def test_the_system_part_lists_the_subagents():
    writer = {"name": "writer", "description": "Drafts text.", "system_prompt": "You write."}
    loop = parent_loop(ScriptedModel([]), subagents=[RESEARCHER, writer])
    request = loop.prepare(State(messages=[Message.user("hi")]))
    (block,) = [b for b in request.system if b.part == PART]
    assert block.part == "system:subagent"
    assert block.block.text.endswith("- researcher: Finds facts.\n- writer: Drafts text.")


def test_an_unknown_subagent_is_an_error_result():
    model = ScriptedModel([task(name="nobody"), text("ok")])
    _, state, _ = run(parent_loop(model))
    result = result_of(state)
    assert result.is_error and "'nobody' is not one of ['researcher']" in result.content
    assert len(model.calls) == 2


def test_no_subagents_or_task_not_allowed_skips_the_slot():
    assert from_config(StackConfig(agent=make_agent())) is None
    no_task = StackConfig(agent=make_agent(allowed_tools=("echo",),
                                           config={"subagents": [RESEARCHER]}))
    assert from_config(no_task) is None
    assert isinstance(from_config(
        StackConfig(agent=make_agent(config={"subagents": [RESEARCHER]}))), SubagentMiddleware)


def test_bad_configuration_is_refused():
    with pytest.raises(ConfigurationError, match="malformed"):
        specs([{"name": "x"}])
    with pytest.raises(ConfigurationError, match="unique"):
        specs([RESEARCHER, RESEARCHER])
    cfg = StackConfig(agent=make_agent())
    spec = SubagentSpec(name="a", description="d", system_prompt="p")
    with pytest.raises(ValueError):
        SubagentMiddleware(subagents=[], parent=cfg.agent, spawn=child_loop_factory(cfg))
    with pytest.raises(ValueError):
        SubagentMiddleware(subagents=[spec], parent=cfg.agent, spawn=child_loop_factory(cfg),
                           max_turns=0)


def test_a_missing_provider_is_an_error_result_not_a_crash():
    agent = make_agent(config={"subagents": [RESEARCHER]})
    mw = SubagentMiddleware(subagents=specs([RESEARCHER]), parent=agent,
                            spawn=child_loop_factory(StackConfig(agent=agent)))
    args = {"subagent": "researcher", "description": "x"}
    (tool,) = mw.provide_tools(State())
    result = tool.run(args, ToolContext(state=State(),
                                        call=ToolUseBlock(id="t", name="task", input=args)))
    assert result.is_error and "provider" in result.content
