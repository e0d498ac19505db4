"""FilesystemMiddleware and the file tools: paths, each tool's answers and errors, offloading
of large results (readable with read_file), per-batch scratch, the system:filesystem part."""

from __future__ import annotations

import re

import pytest

from harness import telemetry
from harness.chain import ToolCallRequest
from harness.loop import FinalOutput
from harness.messages import Message, Response, ToolUseBlock
from harness.middleware import filesystem
from harness.middleware.filesystem import (
    LISTED_FILES,
    PART,
    FilesystemMiddleware,
    modified_paths,
)
from harness.providers.scripted import ScriptedModel, text, tool_call
from harness.stack import RunDeps, StackConfig, default_stack, stack_slots
from harness.state import State
from harness.stores import FileInfo
from harness.tools.base import Tool, ToolContext, ToolResult, await_approval
from harness.tools.files import (
    GREP_MAX_MATCHES,
    LINE_CHUNK,
    TOOL_NAMES,
    FileError,
    glob_regex,
    normalize_path,
)
from tests.harness.helpers import events_named, make_agent, make_loop, run


class MemoryFiles:
    """An in-memory FileStore."""

    def __init__(self, files: dict[str, str] | None = None) -> None:
        self.files = dict(files or {})
        self.writes: list[str] = []

    def list(self) -> list[FileInfo]:
        return [FileInfo(path=p, size=len(c.encode())) for p, c in sorted(self.files.items())]

    def read(self, path: str) -> str | None:
        return self.files.get(path)

    def write(self, path: str, content: str) -> None:
        self.writes.append(path)
        self.files[path] = content


def middleware(files: dict[str, str] | None = None, **kwargs) -> FilesystemMiddleware:
    return FilesystemMiddleware(store=MemoryFiles(files), **kwargs)


def call(mw: FilesystemMiddleware, name: str, state: State | None = None, **args):
    """Run one file tool of ``mw`` directly (no loop)."""
    (tool,) = [t for t in mw.provide_tools(State()) if t.name == name]
    ctx = ToolContext(state=state or State(), call=ToolUseBlock(id="t1", name=name, input=args))
    return tool.run(args, ctx)


def unnumbered(output: str) -> str:
    """read_file's rows back to the text (continuation pieces joined to their line)."""
    lines: list[str] = []
    for row in output.split("\n"):
        if row.startswith("["):
            continue
        number, _, body = row.partition("\t")
        if "." in number:
            lines[-1] += body
        else:
            lines.append(body)
    return "\n".join(lines)


# -- paths ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("raw", "expected"), [
    ("/a.md", "/a.md"), ("/notes/./plan.md", "/notes/plan.md"), ("//notes//a", "/notes/a"),
    ("/notes/", "/notes"), ("/ü/日本.txt", "/ü/日本.txt"),
])
def test_paths_are_normalised(raw, expected):
    assert normalize_path(raw) == expected


@pytest.mark.parametrize(("raw", "message"), [
    ("notes.md", "absolute"), ("/a/../etc", "'..'"), ("/../a", "'..'"), ("/a\x00b", "control"),
    ("/a\nb", "control"), ("/" + "a" * 600, "limited"), ("/", "directory"),
])
def test_bad_paths_are_refused(raw, message):
    with pytest.raises(FileError, match=message):
        normalize_path(raw)


def test_a_directory_path_may_be_the_root():
    assert normalize_path("/", directory=True) == "/"


def test_a_bad_path_is_an_error_result_the_model_reads():
    result = call(middleware(), "write_file", path="../x", content="hi")
    assert result.is_error and "absolute" in result.content
    result = call(middleware(), "read_file", path="/a/../../etc/passwd")
    assert result.is_error and "'..'" in result.content


# -- write, read, edit -----------------------------------------------------------------------


def test_write_creates_then_overwrites():
    mw = middleware()
    assert call(mw, "write_file", path="/notes/a.md", content="one\ntwo\n").content == \
        "Created /notes/a.md (8 bytes)."
    assert call(mw, "write_file", path="/notes//a.md", content="thrée").content == \
        "Overwrote /notes/a.md (6 bytes)."
    assert mw.files.store.files == {"/notes/a.md": "thrée"}


def test_read_numbers_lines_like_cat_n():
    mw = middleware({"/a.txt": "alpha\nbeta\n\ngamma\n"})
    assert call(mw, "read_file", path="/a.txt").content == (
        "     1\talpha\n     2\tbeta\n     3\t\n     4\tgamma")


def test_read_with_offset_and_limit_says_where_to_continue():
    mw = middleware({"/n.txt": "\n".join(f"line {i}" for i in range(1, 11))})
    out = call(mw, "read_file", path="/n.txt", offset=3, limit=2).content
    assert out.split("\n") == ["     4\tline 4", "     5\tline 5",
                               "[Showing lines 4-5 of 10. Continue with offset=5.]"]
    assert call(mw, "read_file", path="/n.txt", offset=8).content.split("\n") == [
        "     9\tline 9", "    10\tline 10"]


def test_read_errors_missing_file_offset_past_end_and_empty_file():
    mw = middleware({"/a.txt": "x\ny", "/dir/b.txt": "b", "/empty": ""})
    missing = call(mw, "read_file", path="/nope.txt")
    assert missing.is_error and missing.content == "File not found: /nope.txt."
    assert "it is a directory" in call(mw, "read_file", path="/dir").content
    past = call(mw, "read_file", path="/a.txt", offset=2)
    assert past.is_error and "past the end of /a.txt, which has 2 lines" in past.content
    assert call(mw, "read_file", path="/empty").content == "/empty is empty."
    bad = call(mw, "read_file", path="/a.txt", limit=0)
    assert bad.is_error and "limit" in bad.content


def test_long_lines_are_shown_in_numbered_pieces_and_nothing_is_lost():
    long_line = "".join(chr(97 + i % 26) for i in range(LINE_CHUNK * 2 + 10))
    mw = middleware({"/long": f"short\n{long_line}\nend"})
    out = call(mw, "read_file", path="/long").content
    assert [row.split("\t")[0].strip() for row in out.split("\n")] == ["1", "2", "2.2", "2.3", "3"]
    assert unnumbered(out) == f"short\n{long_line}\nend"


def test_edit_replaces_a_unique_match():
    mw = middleware({"/a.py": "x = 1\ny = 2\n"})
    result = call(mw, "edit_file", path="/a.py", old_string="y = 2", new_string="y = 3")
    assert not result.is_error and result.content == "Edited /a.py: replaced 1 occurrence(s)."
    assert mw.files.store.files["/a.py"] == "x = 1\ny = 3\n"


def test_edit_refuses_an_ambiguous_match_and_changes_nothing():
    mw = middleware({"/a.py": "v = 1\nv = 1\n"})
    result = call(mw, "edit_file", path="/a.py", old_string="v = 1", new_string="v = 2")
    assert result.is_error and "occurs 2 times" in result.content
    assert "replace_all" in result.content
    assert mw.files.store.files["/a.py"] == "v = 1\nv = 1\n" and mw.files.store.writes == []
    result = call(mw, "edit_file", path="/a.py", old_string="v = 1", new_string="v = 2",
                  replace_all=True)
    assert result.content == "Edited /a.py: replaced 2 occurrence(s)."
    assert mw.files.store.files["/a.py"] == "v = 2\nv = 2\n"


def test_edit_errors_not_found_missing_file_and_no_change():
    mw = middleware({"/a.py": "x = 1\n"})
    result = call(mw, "edit_file", path="/a.py", old_string="x = 2", new_string="x = 3")
    assert result.is_error and "was not found in /a.py" in result.content
    result = call(mw, "edit_file", path="/b.py", old_string="x", new_string="y")
    assert result.is_error and result.content == "File not found: /b.py."
    result = call(mw, "edit_file", path="/a.py", old_string="x", new_string="x")
    assert result.is_error and "the same" in result.content
    assert mw.files.store.writes == []


def test_content_limits():
    mw = middleware(max_file_chars=100, max_files=2)
    assert call(mw, "write_file", path="/big", content="x" * 101).is_error
    nul = call(mw, "write_file", path="/nul", content="a\x00b")
    assert nul.is_error and "NUL" in nul.content
    assert not call(mw, "write_file", path="/1", content="a").is_error
    assert not call(mw, "write_file", path="/2", content="b").is_error
    full = call(mw, "write_file", path="/3", content="c")
    assert full.is_error and "2 files, the limit" in full.content
    assert not call(mw, "write_file", path="/1", content="overwrite is fine").is_error
    grown = call(mw, "edit_file", path="/1", old_string="fine", new_string="f" * 100)
    assert grown.is_error and "limited to 100" in grown.content


# -- ls, glob, grep --------------------------------------------------------------------------

TREE = {"/README.md": "# hi\nTODO: intro\n", "/docs/a.md": "alpha\nTODO later\n",
        "/docs/deep/b.md": "beta\n", "/src/main.py": "print('todo')\nx = 1  # TODO\n"}


def test_ls_lists_files_under_a_directory_with_sizes():
    mw = middleware(TREE)
    assert call(mw, "ls").content.split("\n") == [
        "/README.md (17 bytes)", "/docs/a.md (17 bytes)", "/docs/deep/b.md (5 bytes)",
        "/src/main.py (28 bytes)"]
    assert call(mw, "ls", path="/docs").content.split("\n") == [
        "/docs/a.md (17 bytes)", "/docs/deep/b.md (5 bytes)"]
    assert call(mw, "ls", path="/do").content == "No files under /do."


@pytest.mark.parametrize(("pattern", "path", "expected"), [
    ("**/*.md", "/", ["/README.md", "/docs/a.md", "/docs/deep/b.md"]),
    ("*.md", "/", ["/README.md"]),
    ("*.md", "/docs", ["/docs/a.md"]),
    ("/docs/**", "/src", ["/docs/a.md", "/docs/deep/b.md"]),
    ("src/[lm]ain.p?", "/", ["/src/main.py"]),
    ("**/*.rs", "/", []),
])
def test_glob(pattern, path, expected):
    out = call(middleware(TREE), "glob", pattern=pattern, path=path).content
    assert (out.split("\n") if expected else out.startswith("No files match")) == (
        expected or True)


def test_glob_segments():
    assert glob_regex("*.md").fullmatch("a.md") and not glob_regex("*.md").fullmatch("d/a.md")
    assert glob_regex("**/x").fullmatch("x") and glob_regex("**/x").fullmatch("a/b/x")
    assert glob_regex("[!a]b").fullmatch("cb") and not glob_regex("[!a]b").fullmatch("ab")


def test_grep_regex_literal_path_and_glob_filters():
    mw = middleware(TREE)
    assert call(mw, "grep", pattern=r"TODO\b").content.split("\n") == [
        "/README.md:2: TODO: intro", "/docs/a.md:2: TODO later", "/src/main.py:2: x = 1  # TODO"]
    assert call(mw, "grep", pattern="print('", literal=True).content == \
        "/src/main.py:1: print('todo')"
    assert call(mw, "grep", pattern="TODO", path="/docs").content == "/docs/a.md:2: TODO later"
    assert call(mw, "grep", pattern="TODO", glob="**/*.py").content == \
        "/src/main.py:2: x = 1  # TODO"
    assert call(mw, "grep", pattern="nothing").content == "No matches for 'nothing' under /."
    bad = call(mw, "grep", pattern="print('")
    assert bad.is_error and "literal" in bad.content


def test_grep_output_is_bounded():
    mw = middleware({"/many": "hit\n" * (GREP_MAX_MATCHES + 50)})
    rows = call(mw, "grep", pattern="hit").content.split("\n")
    assert len(rows) == GREP_MAX_MATCHES + 1
    assert rows[-1] == "[50 more matches not shown; narrow the pattern or the path.]"


def test_grep_gives_up_on_a_catastrophic_pattern(monkeypatch):
    monkeypatch.setattr("harness.tools.files.GREP_SECONDS", 0.2)
    mw = middleware({"/x": "x" * 5000})
    result = call(mw, "grep", pattern="(x+x+)+y")
    assert result.is_error and "took too long" in result.content


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
    waiting = await_approval(("approve",))
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
