"""harness.tool_calls: a turn's tool calls through the chain, each phase callable alone."""

from harness.approval_values import Result
from harness.chain import Chain
from harness.messages import ToolUseBlock as Use
from harness.state import State
from harness.tool_calls import run_tools
from harness.tools import Tool
from tests.support.harness import CancelAfter


def test_run_tools_needs_nothing_from_an_earlier_phase():
    """A batch runs given only the chain, the state, the cancel check and the offered tools: an
    unknown tool's error lists what was offered, and a tool sees the run's cancel check."""
    seen = []
    probe = Tool(name="probe", description="Probe.", input_schema={"type": "object"},
                 fn=lambda args, ctx: seen.append(ctx.cancel_requested()) or "ok")
    offered = {"probe": probe, "echo": probe}
    chain = Chain.build([])
    results, pending, cancelled = run_tools(
        chain, [Use(id="n", name="nope", input={})], State(), lambda: False, offered)
    assert (pending, cancelled) == ([], False)
    unknown = "There is no tool named 'nope'. Available: echo, probe."
    assert results == {"n": Result(content=unknown, is_error=True)}
    # The check before the call answers False, the tool's own check True: the same check
    # reached the tool.
    results, _, cancelled = run_tools(chain, [Use(id="p", name="probe", input={})], State(),
                                      CancelAfter(checks=1).cancel_requested, offered)
    assert results == {"p": Result(content="ok")} and seen == [True] and not cancelled
