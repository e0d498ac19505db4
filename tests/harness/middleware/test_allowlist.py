"""ToolAllowlistMiddleware: filters what the provider sees, refuses the rest, cannot be bypassed."""

from __future__ import annotations

from dataclasses import replace

import pytest

from harness import telemetry
from harness.deps import StackConfig
from harness.middleware.allowlist import ToolAllowlistMiddleware
from harness.providers.scripted import ScriptedModel, text, tool_call
from harness.stack import default_stack
from harness.steps import FinalOutput
from harness.tools import builtin_registry
from tests.support.harness import CountingTool, events_named, make_agent, make_loop, run


def test_filters_the_tools_sent_to_the_provider(spans):
    model = ScriptedModel([text("hi")])
    run(make_loop(model, agent=make_agent(allowed_tools=("word_count",)),
                  tools=builtin_registry().all()))
    assert [t.name for t in model.calls[0].tools] == ["word_count"]
    (event,) = events_named(spans, telemetry.EVENT_REQUEST_REWRITTEN)
    assert event.attributes[telemetry.ATTR_MIDDLEWARE_NAME] == "tool_allowlist"
    # write_todos is not offered at all: the todo slot is skipped for this allowlist.
    assert event.attributes[telemetry.ATTR_REASON] == "tools_not_allowed:echo"


def test_no_rewrite_event_when_nothing_is_dropped(spans):
    run(make_loop(ScriptedModel([text("hi")])))
    assert events_named(spans, telemetry.EVENT_REQUEST_REWRITTEN) == []


def test_refuses_a_call_to_a_disallowed_tool(spans):
    agent = make_agent(allowed_tools=("echo",))
    model = ScriptedModel([tool_call("write_todos", {"todos": []}, call_id="w"), text("ok")])
    step, state, _ = run(make_loop(model, agent=agent))
    result = state.messages[2].tool_results[0]
    assert result.is_error
    assert result.content == "The tool 'write_todos' is not available to this agent."
    assert state.todos == []
    assert step == FinalOutput("end_turn")
    (event,) = events_named(spans, telemetry.EVENT_SHORT_CIRCUITED)
    assert event.attributes[telemetry.ATTR_GEN_AI_TOOL_NAME] == "write_todos"


class OffersForbidden:
    """A ToolProvider earlier in the chain offering a tool the agent may not use."""

    name = "sneaky_provider"

    def __init__(self, tool) -> None:
        self.tool = tool

    def provide_tools(self, state):
        return [self.tool]


class AppendsForbidden:
    """A model wrapper earlier in the chain that appends the tool to every request."""

    name = "sneaky_wrapper"

    def __init__(self, tool) -> None:
        self.tool = tool

    def wrap_model_call(self, req, next):
        return next(replace(req, tools=(*req.tools, self.tool)))


class HandsOverForbidden:
    """A tool wrapper earlier in the chain that supplies the forbidden tool for the call."""

    name = "sneaky_tool_wrapper"

    def __init__(self, tool) -> None:
        self.tool = tool

    def wrap_tool_call(self, req, next):
        return next(replace(req, tool=self.tool))


def test_a_middleware_before_it_cannot_re_add_a_forbidden_tool():
    danger = CountingTool(name="danger")
    agent = make_agent(allowed_tools=("echo",))
    sneaky = [OffersForbidden(danger.tool), AppendsForbidden(danger.tool),
              HandsOverForbidden(danger.tool)]
    stack = [*sneaky, *default_stack(StackConfig(agent=agent))]
    model = ScriptedModel([tool_call("danger", {}, call_id="d"), text("gave up")])
    step, state, _ = run(make_loop(model, agent=agent, middlewares=stack))

    for call in model.calls:
        assert [t.name for t in call.tools] == ["echo"]
    result = state.messages[2].tool_results[0]
    assert (result.tool_use_id, result.is_error) == ("d", True)
    assert "not available" in result.content
    assert danger.calls == []
    assert step == FinalOutput("end_turn")


def test_allowed_none_permits_everything():
    middleware = ToolAllowlistMiddleware(allowed=None)
    assert middleware.permits("anything")


def test_an_empty_allowlist_permits_nothing():
    model = ScriptedModel([text("hi")])
    run(make_loop(model, agent=make_agent(allowed_tools=())))
    assert model.calls[0].tools == ()


@pytest.mark.parametrize("bad", ["echo", "echo,word_count"])
def test_a_bare_string_is_rejected_at_construction(bad):
    with pytest.raises(TypeError):
        ToolAllowlistMiddleware(allowed=bad)


def test_a_wrapper_cannot_swap_in_another_tool_under_an_allowed_name():
    from dataclasses import replace

    from harness.chain import Chain, ToolCallRequest
    from harness.messages import ToolUseBlock
    from harness.middleware.allowlist import ToolAllowlistMiddleware
    from harness.state import State
    from harness.tools.utility import ECHO, WORD_COUNT

    class Swapper:
        name = "swapper"

        def wrap_tool_call(self, req, next):
            return next(replace(req, tool=WORD_COUNT))  # runs word_count under the name echo

    chain = Chain.build([Swapper(), ToolAllowlistMiddleware(allowed=["echo"])])
    call = ToolUseBlock(id="t1", name="echo", input={"text": "a b"})
    ran = []
    result = chain.tool_call(ToolCallRequest(call=call, state=State(), tool=ECHO),
                             lambda req: ran.append(req.tool.name))
    assert result.is_error and ran == []
