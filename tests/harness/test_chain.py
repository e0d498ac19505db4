"""harness.chain: partition at build, index 0 outermost, retries, short-circuits, prompts."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest

from harness import telemetry
from harness.chain import (
    AGENT_PART,
    Chain,
    ModelRequest,
    SourcedBlock,
    ToolCallRequest,
)
from harness.errors import ConfigurationError, ProviderUnavailable
from harness.messages import Request, TextBlock, ToolUseBlock
from harness.middleware.todo import PART as TODO_PART
from harness.middleware.todo import TodoMiddleware
from harness.providers.scripted import ScriptedModel, text, tool_call
from harness.state import State, Todo
from harness.steps import Failed, FinalOutput
from harness.tools import ToolResult
from tests.support.doubles import (
    Contributes,
    Hook,
    Marker,
    OnlyModel,
    OnlyTool,
    Provides,
    Recording,
)
from tests.support.harness import CountingTool, make_agent, make_loop, run, spans_named


class Everything(OnlyModel, OnlyTool, Hook, Provides, Contributes):
    def __init__(self, name: str) -> None:
        Marker.__init__(self, name)
        self.log, self.offered, self.texts = [], [], ()


def model_request(state: State | None = None) -> ModelRequest:
    return ModelRequest(request=Request(model="m"), system=(), tools=(),
                        state=state or State(), agent=make_agent())


# -- build --------------------------------------------------------------------------------------

def test_protocols_are_partitioned_once_at_build():
    model, tool, hook = OnlyModel("model"), OnlyTool("tool"), Hook("hook")
    provider, contributor, marker, every = (
        Provides("provider"), Contributes("contributor"), Marker("marker"), Everything("every"))
    chain = Chain.build([model, tool, hook, provider, contributor, marker, every])
    assert chain.model_wrappers == [model, every]
    assert chain.tool_wrappers == [tool, every]
    assert chain.run_hooks == [hook, every]
    assert chain.tool_providers == [provider, every]
    assert chain.contributors == [contributor, every]
    assert chain.names == ["model", "tool", "hook", "provider", "contributor", "marker", "every"]


def test_duplicate_names_raise_configuration_error():
    with pytest.raises(ConfigurationError, match="unique"):
        Chain.build([OnlyModel("same"), OnlyTool("same")])


def test_an_empty_chain_calls_the_base_handlers_directly():
    chain = Chain.build([])
    response = text("base")
    assert chain.model_call(model_request(), lambda req: response) is response
    req = ToolCallRequest(call=ToolUseBlock(id="t", name="x", input={}), state=State(), tool=None)
    assert chain.tool_call(req, lambda r: ToolResult(content="base")).content == "base"


# -- order --------------------------------------------------------------------------------------

def test_index_0_is_outermost_for_model_calls():
    log: list[str] = []
    chain = Chain.build([Recording("a", log), OnlyTool("t"), Recording("b", log),
                         Recording("c", log)])

    def base(req):
        log.append("provider")
        return text("done")

    chain.model_call(model_request(), base)
    assert log == ["enter:a", "enter:b", "enter:c", "provider", "exit:c", "exit:b", "exit:a"]


def test_index_0_is_outermost_for_tool_calls():
    log: list[str] = []
    chain = Chain.build([Recording("a", log), OnlyModel("m"), Recording("b", log),
                         Recording("c", log)])
    req = ToolCallRequest(call=ToolUseBlock(id="t", name="x", input={}), state=State(), tool=None)

    def base(r):
        log.append("tool")
        return ToolResult(content="ok")

    chain.tool_call(req, base)
    assert log == ["enter:a", "enter:b", "enter:c", "tool", "exit:c", "exit:b", "exit:a"]


def test_order_holds_inside_a_real_loop():
    log: list[str] = []
    counter = CountingTool()
    model = ScriptedModel([tool_call("counter", {}), text("done")])
    loop = make_loop(model, middlewares=[Recording("outer", log), Recording("inner", log)],
                     tools=[counter.tool])
    run(loop)
    nested = ["enter:outer", "enter:inner", "exit:inner", "exit:outer"]
    assert log == nested * 3  # model call, tool call, model call
    assert len(counter.calls) == 1


def test_tools_are_base_then_providers_in_chain_order_first_name_wins():
    a, b, b2, c = (CountingTool(name=n).tool for n in ("a", "b", "b", "c"))
    chain = Chain.build([Provides("p1", b2, c), OnlyModel("m"), Provides("p2", b)])
    tools = chain.tools(State(), [a, b])
    assert [t.name for t in tools] == ["a", "b", "c"]
    assert tools[1] is b


# -- wrappers that change behaviour ---------------------------------------------------------------

class RetryOnce(Marker):
    def wrap_model_call(self, req, next):
        try:
            return next(req)
        except ProviderUnavailable:
            telemetry.record_event(telemetry.EVENT_RETRIED, {
                telemetry.ATTR_MIDDLEWARE_NAME: self.name, telemetry.ATTR_REASON: "unavailable"})
            return next(req)


def test_a_model_wrapper_that_retries_once():
    model = ScriptedModel([ProviderUnavailable("502 from upstream"), text("recovered")])
    step, state, recorder = run(make_loop(model, middlewares=[RetryOnce("retry")]))
    assert step == FinalOutput("end_turn")
    assert len(model.calls) == 2
    assert model.calls[0] == model.calls[1]  # the same request, sent again
    assert state.messages[-1].text == "recovered"
    assert len(recorder.results[0].usage) == 1  # only the call that answered is billed


def test_without_the_retry_wrapper_the_same_failure_fails_the_run():
    model = ScriptedModel([ProviderUnavailable("502 from upstream"), text("recovered")])
    step, _, _ = run(make_loop(model, middlewares=[]))
    assert step == Failed("provider_unavailable", "502 from upstream")
    assert len(model.calls) == 1


class ShortCircuit(Marker):
    def wrap_tool_call(self, req, next):
        return ToolResult(content=f"cached answer for {req.call.name}")


def test_a_tool_wrapper_that_short_circuits():
    counter = CountingTool()
    model = ScriptedModel([tool_call("counter", {}, call_id="c1"), text("done")])
    step, state, _ = run(make_loop(model, middlewares=[ShortCircuit("cache")],
                                   tools=[counter.tool]))
    assert step == FinalOutput("end_turn")
    assert counter.calls == []
    result = model.calls[1].messages[-1].tool_results[0]
    assert (result.tool_use_id, result.content, result.is_error) == (
        "c1", "cached answer for counter", False)


# -- system prompt assembly ------------------------------------------------------------------------

class SystemInspector(Marker):
    """Asserts, by index and inside model_call, the order the prompt-cache/memory contract needs."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.seen: list[list[str]] = []

    def wrap_model_call(self, req, next):
        parts = [sb.part for sb in req.system]
        assert req.system[0].part == AGENT_PART
        assert req.system[0].block.text == req.agent.system_prompt
        assert parts.index("system:skills") < parts.index(TODO_PART)
        # The contract PromptCache relies on, by index: its breakpoint is the last block before
        # the first dynamic part (todo and memory are both dynamic), so here the skills index;
        # contributors later in the chain — memory — always land after it.
        breakpoint_index = parts.index(TODO_PART) - 1
        assert breakpoint_index == 1
        assert req.system[breakpoint_index].part == "system:skills"
        memory_indices = [i for i, p in enumerate(parts) if p == "system:memory"]
        assert memory_indices == [3, 4]
        assert all(i > breakpoint_index for i in memory_indices)
        self.seen.append(parts)
        return next(req)


def test_system_blocks_are_assembled_by_index_inside_model_call():
    inspector = SystemInspector("inspector")
    chain = [inspector, Contributes("skills", "skill index"), TodoMiddleware(),
             Contributes("memory", "memory one", "memory two")]
    model = ScriptedModel([tool_call("write_todos", {"todos": []}), text("done")])
    agent = make_agent(system_prompt="You are the agent.")
    run(make_loop(model, agent=agent, middlewares=chain, tools=[]))
    expected = ["system:agent", "system:skills", TODO_PART, "system:memory", "system:memory"]
    assert inspector.seen == [expected, expected]  # assembled on every model call
    for call in model.calls:
        texts = [b.text for b in call.system]
        assert texts[:2] == ["You are the agent.", "skill index"]
        assert texts[3:] == ["memory one", "memory two"]


@pytest.mark.parametrize("order", list(itertools.permutations(["skills", "todo", "memory"])))
def test_a_contributor_later_in_the_chain_lands_at_a_higher_index(order):
    chain = Chain.build([Contributes(name, name) for name in order])
    blocks = chain.system_blocks(make_agent(system_prompt="agent"), State())
    assert [sb.part for sb in blocks] == ["system:agent", *(f"system:{n}" for n in order)]


def test_no_agent_block_without_a_system_prompt():
    chain = Chain.build([Contributes("memory", "m")])
    blocks = chain.system_blocks(make_agent(system_prompt=""), State())
    assert [sb.part for sb in blocks] == ["system:memory"]


def test_a_wrapper_may_rewrite_the_assembled_blocks_for_one_call():
    class Rewrite(Marker):
        def wrap_model_call(self, req, next):
            extra = SourcedBlock(part="system:extra", block=TextBlock(text="extra"))
            return next(replace(req, system=(*req.system, extra)))

    model = ScriptedModel([text("done")])
    step, state, _ = run(make_loop(model, middlewares=[Rewrite("rewrite")], tools=[]))
    assert [b.text for b in model.calls[0].system] == ["You are a test agent.", "extra"]
    assert step == FinalOutput("end_turn")


# -- before_run ------------------------------------------------------------------------------------

def test_before_run_runs_each_hook_once_under_one_span(spans):
    log: list[str] = []
    model = ScriptedModel([tool_call("write_todos", {"todos": []}), text("done")])

    class Planner(Hook):
        def before_run(self, state):
            super().before_run(state)
            log.append(f"model calls so far: {len(model.calls)}")
            state.todos = [Todo(content="from before_run", status="pending")]

    chain = [Planner("first", log), OnlyModel("not-a-hook"), Hook("second", log), TodoMiddleware()]
    run(make_loop(model, middlewares=chain, tools=[]))

    assert log == ["first", "model calls so far: 0", "second"]
    assert "from before_run" in model.calls[0].system[-1].text  # the hook's state update is seen
    (parent,) = spans_named(spans, telemetry.SPAN_BEFORE_RUN)
    (invoke,) = spans_named(spans, telemetry.SPAN_INVOKE_AGENT)
    assert parent.parent.span_id == invoke.context.span_id
    children = sorted((s for s in spans.get_finished_spans()
                       if s.parent and s.parent.span_id == parent.context.span_id),
                      key=lambda s: s.start_time)
    assert [s.attributes[telemetry.ATTR_MIDDLEWARE_NAME] for s in children] == ["first", "second"]
    assert all(s.name.startswith(telemetry.SPAN_BEFORE_RUN) for s in children)
