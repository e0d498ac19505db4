"""FilesystemMiddleware: offloading of large results (readable with read_file), per-batch
scratch, the system:filesystem part and its slot."""

from __future__ import annotations

import re

import pytest

from harness import telemetry
from harness.approval_values import AwaitingApproval
from harness.chain import ToolCallRequest
from harness.deps import RunDeps, StackConfig
from harness.messages import Message, Response, ToolUseBlock
from harness.middleware import filesystem
from harness.middleware.filesystem import (
    LISTED_FILES,
    PART,
    FilesystemMiddleware,
    modified_paths,
)
from harness.providers.scripted import ScriptedModel, text, tool_call
from harness.stack import default_stack, stack_slots
from harness.state import State
from harness.steps import FinalOutput
from harness.tools.base import Tool, ToolResult
from harness.tools.files import (
    TOOL_NAMES,
)
from tests.support.files import MemoryFiles, call, middleware, unnumbered
from tests.support.harness import events_named, make_agent, make_loop, run

# -- offloading ------------------------------------------------------------------------------


def big_result(lines: int = 3000) -> str:
    return "\n".join(f"row {i}: " + "data " * 3 for i in range(lines))


def file_stack(store, agent=None, threshold=5_000):
    agent = agent or make_agent()
    deps = RunDeps(files=store, large_tool_result_chars=threshold)
    return default_stack(StackConfig(agent=agent, deps=deps))


def big_tool(content: str) -> Tool:
    return Tool(name="fetch", description="Returns a lot.", input_schema={"type": "object"},
                fn=lambda args, ctx: content)


def test_a_large_result_is_offloaded_and_readable_with_read_file(spans):
    content = big_result()
    store = MemoryFiles()
    model = ScriptedModel([
        tool_call("fetch", {}, call_id="toolu_big"),
        tool_call("read_file", {"path": "/large_tool_results/toolu_big"}, call_id="r1"),
        tool_call("read_file", {"path": "/large_tool_results/toolu_big", "offset": 1000,
                                "limit": 5000}, call_id="r2"),
        text("done"),
    ])
    loop = make_loop(model, middlewares=file_stack(store), tools=[big_tool(content)])
    step, state, _ = run(loop)
    assert step == FinalOutput("end_turn")
    assert store.files["/large_tool_results/toolu_big"] == content
    pointer = state.messages[2].tool_results[0]
    assert len(pointer.content) < 2_000 and not pointer.is_error
    assert "/large_tool_results/toolu_big" in pointer.content
    assert f"({len(content)} characters, 3000 lines)" in pointer.content
    assert "     1\trow 0: data data data " in pointer.content  # the preview
    # read_file pages through it (each page within the threshold, never offloaded again).
    first, second = (m.tool_results[0].content for m in state.messages[4:7:2])
    assert first.endswith("Continue with offset=" + re.search(r"offset=(\d+)", first)[1] + ".]")
    assert len(first) <= 5_000 + 100 and "row 0:" in first
    assert second.startswith("  1001\trow 1000: ")
    (event,) = events_named(spans, telemetry.EVENT_TOOL_RESULT_OFFLOADED)
    assert event.attributes[telemetry.ATTR_TOOL_RESULT_CHARS] == len(content)
    assert event.attributes[telemetry.ATTR_GEN_AI_TOOL_NAME] == "fetch"


def test_paging_read_file_gives_back_the_whole_offloaded_result():
    content = big_result(2000)
    mw = middleware(offload_threshold=5_000)
    req = ToolCallRequest(call=ToolUseBlock(id="call:1/x", name="fetch", input={}),
                          state=State(), tool=None)
    pointer = mw.wrap_tool_call(req, lambda r: ToolResult(content=content))
    assert "/large_tool_results/call_1_x" in pointer.content
    pages, offset = [], 0
    while True:
        page = call(mw, "read_file", path="/large_tool_results/call_1_x", offset=offset,
                    limit=5_000).content
        pages.append(unnumbered(page))
        found = re.search(r"Continue with offset=(\d+)", page)
        if not found:
            break
        offset = int(found[1])
    assert "\n".join(pages) == content and len(pages) > 3


def offload(mw: FilesystemMiddleware, content: str, call_id: str = "c1") -> ToolResult:
    req = ToolCallRequest(call=ToolUseBlock(id=call_id, name="fetch", input={}), state=State(),
                          tool=None)
    return mw.wrap_tool_call(req, lambda r: ToolResult(content=content))


def test_offloading_stores_what_a_file_can_hold():
    mw = middleware(offload_threshold=5_000, max_file_chars=8_000)
    pointer = offload(mw, "a\x00b\n" * 3_000)
    stored = mw.files.store.files["/large_tool_results/c1"]
    assert len(stored) == 8_000 and "\x00" not in stored and stored.startswith("a\ufffdb\n")
    assert "(12000 characters, 3000 lines)" in pointer.content
    assert "Only its first 8000 characters were kept." in pointer.content


def test_when_the_file_cannot_be_written_the_result_is_cut_to_a_preview():
    mw = middleware({"/full": "x"}, offload_threshold=5_000, max_files=1)
    pointer = offload(mw, "line\n" * 2_000)
    assert len(pointer.content) < 1_000
    assert pointer.content.endswith("(10000 characters) was dropped: The session already has "
                                    "1 files, the limit.]")


def test_small_results_file_tool_results_and_approvals_are_not_offloaded():
    mw = middleware(offload_threshold=5_000)

    def through(name, result):
        req = ToolCallRequest(call=ToolUseBlock(id="c", name=name, input={}), state=State(),
                              tool=None)
        return mw.wrap_tool_call(req, lambda r: result)

    small = ToolResult(content="x" * 5_000)
    assert through("fetch", small) is small
    own = ToolResult(content="x" * 9_000)
    assert through("grep", own) is own
    waiting = AwaitingApproval(allowed_decisions=("approve",))
    assert through("fetch", waiting) is waiting
    assert mw.files.store.files == {}


def test_without_read_file_nothing_is_offloaded():
    mw = middleware(allowed_tools=("ls", "write_file"), offload_threshold=5_000)
    assert [t.name for t in mw.provide_tools(State())] == ["ls", "write_file"]
    req = ToolCallRequest(call=ToolUseBlock(id="c", name="fetch", input={}), state=State(),
                          tool=None)
    result = ToolResult(content="x" * 9_000)
    assert mw.wrap_tool_call(req, lambda r: result) is result


# -- scratch ---------------------------------------------------------------------------------


def batch(*calls: tuple[str, dict]) -> Response:
    """A scripted step calling several tools in one batch."""
    return Response(message=Message(role="assistant", content=tuple(
        ToolUseBlock(id=f"c{i}", name=name, input=args) for i, (name, args) in enumerate(calls))),
        stop_reason="tool_use")


def test_modified_paths_are_per_batch_scratch():
    seen: list[tuple[str, ...]] = []
    probe = Tool(name="probe", description="Records the modified paths.",
                 input_schema={"type": "object"},
                 fn=lambda args, ctx: seen.append(modified_paths(ctx.state)) or "ok")
    model = ScriptedModel([
        tool_call("probe", {"n": 0}, call_id="p0"),
        batch(("write_file", {"path": "/a", "content": "1"}),
              ("edit_file", {"path": "/a", "old_string": "1", "new_string": "2"}),
              ("write_file", {"path": "/b", "content": "3"}),
              ("probe", {"n": 1})),
        tool_call("probe", {"n": 2}, call_id="p2"),
        text("done"),
    ])
    store = MemoryFiles()
    _, state, _ = run(make_loop(model, middlewares=file_stack(store), tools=[probe]))
    # Empty before any write, both paths once during their batch, empty again in the next one.
    assert seen == [(), ("/a", "/b"), ()]
    assert state.scratch == {} and store.files == {"/a": "2", "/b": "3"}


# -- the system part, the slot ---------------------------------------------------------------


def test_the_system_part_describes_the_tools_and_lists_files():
    mw = middleware({"/b.md": "bb", "/a.md": "a"}, offload_threshold=5_000)
    (block,) = mw.system_blocks(State())
    assert block.part == PART == "system:filesystem"
    body = block.block.text
    assert "ls, read_file, write_file, edit_file, glob, grep" in body
    assert "longer than 5000 characters are saved under /large_tool_results/" in body
    assert body.endswith("Files (2):\n- /a.md (1 bytes)\n- /b.md (2 bytes)")
    assert middleware().system_blocks(State())[0].block.text.endswith("The filesystem is empty.")


def test_the_file_list_in_the_system_part_is_bounded():
    mw = middleware({f"/f{i:03}": "x" for i in range(LISTED_FILES + 7)})
    body = mw.system_blocks(State())[0].block.text
    assert body.count("\n- /f") == LISTED_FILES
    assert body.endswith("… and 7 more (use ls or glob).")


def test_the_part_reaches_the_request_after_the_agent_prompt():
    model = ScriptedModel([text("hi")])
    loop = make_loop(model, middlewares=file_stack(MemoryFiles({"/x": "1"})))
    request = loop.prepare(State(messages=[Message.user("hi")]))
    parts = [b.part for b in request.system]
    assert parts.index("system:agent") < parts.index(PART)
    run(loop)
    names = [t.name for t in model.calls[0].tools]
    assert names[:2] == ["echo", "word_count"] and set(TOOL_NAMES) <= set(names)


def test_the_slot_is_skipped_without_a_store_or_an_allowed_file_tool():
    def slot(cfg):
        (found,) = [s for s in stack_slots(cfg) if s.name == "filesystem"]
        return found

    assert slot(StackConfig(agent=make_agent())).middleware is None
    assert slot(StackConfig(agent=make_agent())).why.startswith("skipped")
    no_tools = StackConfig(agent=make_agent(allowed_tools=("echo",)),
                           deps=RunDeps(files=MemoryFiles()))
    assert slot(no_tools).middleware is None
    some = StackConfig(agent=make_agent(allowed_tools=("read_file", "grep")),
                       deps=RunDeps(files=MemoryFiles(), large_tool_result_chars=8_000))
    built = slot(some).middleware
    assert isinstance(built, FilesystemMiddleware) and built.offload_threshold == 8_000
    assert [t.name for t in built.provide_tools(State())] == ["read_file", "grep"]
    assert filesystem.from_config(some) is not None


def test_constructor_rejects_bad_arguments():
    with pytest.raises(ValueError, match="offload_threshold"):
        middleware(offload_threshold=10)
    with pytest.raises(TypeError):
        middleware(allowed_tools="ls")
    with pytest.raises(ValueError, match="no file tool"):
        middleware(allowed_tools=("echo",))
