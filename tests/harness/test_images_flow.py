"""A tool result's images on their way through the harness: into the results message, through a
pause for approval (``state_json``) and a cancel's close, past the filesystem offload, into the
stored JSON and a summary's transcript."""

from __future__ import annotations

import pytest

from harness import approvals, serde
from harness.approval_values import ApprovalDecision, PendingBatch, PendingCall, Result
from harness.deps import RunDeps, StackConfig
from harness.errors import InvalidContent
from harness.messages import ImageBlock, Message, Response, ToolResultBlock, ToolUseBlock
from harness.middleware._summarizer import render
from harness.providers.scripted import ScriptedModel, text, tool_call
from harness.serde import block_from_json, block_to_json, message_from_json, message_to_json
from harness.stack import default_stack
from harness.state import State, state_from_json, state_to_json
from harness.steps import Interrupted
from harness.tools import Tool, ToolResult, builtin_registry
from tests.support.files import MemoryFiles
from tests.support.harness import CountingTool, make_agent, make_loop, run
from tests.support.images import png_image

SHOT = png_image(64, 48)
RESULT = ToolResultBlock(tool_use_id="c1", content="the page", images=(SHOT,))


def screenshot_tool(content: str = "the page", *shots: ImageBlock) -> Tool:
    return Tool(name="screenshot", description="A screenshot.", input_schema={"type": "object"},
                fn=lambda args, ctx: ToolResult(content=content, images=shots or (SHOT,)))


# -- stored JSON -----------------------------------------------------------------------------

def test_a_result_with_images_round_trips_and_one_without_is_stored_as_before():
    data = block_to_json(RESULT)
    assert data["images"] == [{"type": "image", "media_type": "image/png", "data": SHOT.data}]
    assert block_from_json(data) == RESULT
    message = Message(role="user", content=(RESULT,))
    assert message_from_json(message_to_json(message)) == message
    old = {"type": "tool_result", "tool_use_id": "c1", "content": "x", "is_error": False}
    assert block_from_json(old) == ToolResultBlock(tool_use_id="c1", content="x")
    assert block_to_json(block_from_json(old)) == old  # no "images" key written


@pytest.mark.parametrize("images", [{}, [{"type": "text", "text": "x"}],
                                    [{"type": "image", "media_type": "image/png"}],
                                    [{"type": "image", "media_type": "", "data": "AAAA"}]])
def test_malformed_images_are_refused(images):
    with pytest.raises(InvalidContent):
        block_from_json({"type": "tool_result", "tool_use_id": "c1", "content": "",
                         "images": images})


# -- a batch ---------------------------------------------------------------------------------

def test_a_tools_images_reach_the_results_message_and_a_refused_one_becomes_a_line():
    svg = ImageBlock(media_type="image/svg+xml", data="PHN2Zy8+")
    model = ScriptedModel([tool_call("screenshot", {}, call_id="c1"), text("seen")])
    loop = make_loop(model, tools=[screenshot_tool("page", SHOT, svg)])
    _, state, _ = run(loop)
    [result] = state.messages[2].tool_results
    assert result.images == (SHOT,)
    assert result.content == ("page\n[image/svg+xml image not shown: its data is not a PNG, "
                              "JPEG, GIF or WebP image]")
    assert model.calls[1].messages[-1].tool_results[0].images == (SHOT,)  # sent on


def approval_loop():
    delete = CountingTool(name="delete", answer="deleted")
    agent = make_agent(config={"interrupt_on": {"delete": ["approve", "reject"]}})
    batch = Response(message=Message(role="assistant", content=(
        ToolUseBlock(id="a", name="screenshot", input={}),
        ToolUseBlock(id="b", name="delete", input={}))), stop_reason="tool_use")
    loop = make_loop(ScriptedModel([batch, text("done")]), agent=agent,
                     middlewares=default_stack(StackConfig(agent=agent)),
                     tools=[screenshot_tool(), delete.tool, *builtin_registry().all()])
    step, state, _ = run(loop, State(messages=[Message.user("look, then delete")]))
    assert step == Interrupted("paused")
    return loop, state


def checkpointed(state: State) -> State:
    """The state as a worker restores it from ``state_json``."""
    return state_from_json(state_to_json(state), messages=list(state.messages), turn=state.turn)


def test_a_paused_batch_keeps_a_finished_calls_images_through_state_json():
    loop, paused = approval_loop()
    restored = checkpointed(paused)
    assert restored.pending_batch.done["a"] == Result(content="the page", images=(SHOT,))
    restored.pending_batch = approvals.decide(restored.pending_batch,
                                              [{"tool_use_id": "b", "type": "approve"}])
    _, state, _ = run(loop, checkpointed(restored))
    first, second = state.messages[2].tool_results
    assert (first.tool_use_id, first.content, first.images) == ("a", "the page", (SHOT,))
    assert (second.tool_use_id, second.content, second.images) == ("b", "deleted", ())


def test_closing_a_cancelled_batch_keeps_the_images_of_what_ran():
    _, paused = approval_loop()
    closing = approvals.close(paused.messages[-1].tool_uses, checkpointed(paused).pending_batch)
    first, second = closing.tool_results
    assert first.images == (SHOT,) and second.images == () and second.is_error


def test_a_batch_persisted_before_images_reads_back():
    batch = PendingBatch(done={"a": Result(content="x")}, pending=(PendingCall(
        tool_use_id="b", name="delete", input={}, allowed_decisions=("approve",)),),
        decisions={"b": ApprovalDecision(type="approve")})
    stored = serde.batch_to_json(batch)
    assert stored["done"] == {"a": {"content": "x", "is_error": False}}
    assert serde.batch_from_json(stored) == batch
    stored["done"]["a"]["images"] = [{"type": "image"}]
    with pytest.raises(InvalidContent):
        serde.batch_from_json(stored)


# -- offload ---------------------------------------------------------------------------------

def test_an_offloaded_result_keeps_its_images():
    long_text = "\n".join(f"line {i} " * 8 for i in range(2_000))
    store = MemoryFiles()
    agent = make_agent()
    model = ScriptedModel([tool_call("screenshot", {}, call_id="big"), text("ok")])
    stack = default_stack(StackConfig(agent=agent, deps=RunDeps(
        files=store, large_tool_result_chars=5_000)))
    loop = make_loop(model, agent=agent, middlewares=stack, tools=[screenshot_tool(long_text)])
    _, state, _ = run(loop)
    [result] = state.messages[2].tool_results
    assert store.files["/large_tool_results/big"] == long_text
    assert "/large_tool_results/big" in result.content and len(result.content) < 3_000
    assert result.images == (SHOT,)


def test_a_summary_transcript_says_a_result_had_images():
    names = {"c1": "screenshot"}
    assert render(Message(role="user", content=(RESULT,)), names) == (
        "screenshot result: the page [image/png image]")
