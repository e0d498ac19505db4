"""MemoryMiddleware: one block per file after the stable prefix, loaded once per run and bounded;
update_memory writes through the store, and only the next run sees the change."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from harness import telemetry
from harness.agent import AgentSpec
from harness.chain import ModelRequest
from harness.deps import RunDeps, StackConfig
from harness.messages import Message
from harness.middleware.memory import (
    TOOL_NAME,
    MemoryMiddleware,
    MemorySnapshot,
    part_id,
    path_problem,
    render,
)
from harness.providers.scripted import ScriptedModel, text, tool_call
from harness.stack import default_stack, stack_slots
from harness.state import State, state_from_json, state_to_json
from harness.steps import FinalOutput
from harness.stores import MemoryFile
from tests.support.harness import SKILL_IDS, events_named, make_agent, make_loop, run, spans_named

AGENTS_MD = "/memories/AGENTS.md"


@dataclass
class DictMemory:
    """An in-memory MemoryStore counting its loads."""

    files: dict[str, str] = field(default_factory=dict)
    loads: int = 0
    refuse: str | None = None  # a write raises ValueError with this message

    def load(self) -> list[MemoryFile]:
        self.loads += 1
        return [MemoryFile(path=p, content=c) for p, c in sorted(self.files.items())]

    def write(self, path: str, content: str) -> None:
        if self.refuse:
            raise ValueError(self.refuse)
        self.files[path] = content


class BrokenMemory(DictMemory):
    def load(self) -> list[MemoryFile]:
        raise TimeoutError("canceling statement due to statement timeout")


class Capture:
    """Innermost model wrapper: keeps every request as the chain assembled it (with part ids)."""

    name = "capture"

    def __init__(self) -> None:
        self.requests: list[ModelRequest] = []

    def wrap_model_call(self, req, next):
        self.requests.append(req)
        return next(req)

    def parts(self, index: int = 0) -> list[str]:
        return [sb.part for sb in self.requests[index].system]

    def memory_texts(self, index: int = 0) -> list[str]:
        return [sb.block.text for sb in self.requests[index].system
                if sb.part.startswith("system:memory:")]


def memory_agent(*, writable: bool = False, **fields) -> AgentSpec:
    return make_agent(config={"memory": {"writable": writable}}, **fields)


def run_memory(store, steps, *, agent: AgentSpec | None = None, max_bytes: int = 32_768,
               state: State | None = None):
    agent = agent or memory_agent()
    capture = Capture()
    deps = RunDeps(memory=store, memory_max_bytes=max_bytes)
    stack = [*default_stack(StackConfig(agent=agent, deps=deps)), capture]
    model = ScriptedModel(list(steps))
    step, state, _ = run(make_loop(model, agent=agent, middlewares=stack), state)
    return step, state, capture, model


def test_one_block_per_file_in_path_order_after_the_stable_prefix():
    store = DictMemory({AGENTS_MD: "Prefer short answers.", "/memories/a.md": "alpha"})
    _, _, capture, model = run_memory(store, [text("ok")])
    assert capture.parts() == ["system:agent", "system:todo", "system:memory:/memories/AGENTS.md",
                               "system:memory:/memories/a.md"]
    assert capture.memory_texts() == [render(AGENTS_MD, "Prefer short answers."),
                                      render("/memories/a.md", "alpha")]
    assert render(AGENTS_MD, "x") == '<memory path="/memories/AGENTS.md">\nx\n</memory>'
    # The provider gets the blocks without provenance, in the same order.
    assert [b.text for b in model.calls[0].system][2:] == capture.memory_texts()
    assert part_id(AGENTS_MD) == "system:memory:/memories/AGENTS.md"


def test_no_files_no_blocks():
    _, _, capture, _ = run_memory(DictMemory(), [text("ok")])
    assert capture.parts() == ["system:agent", "system:todo"]


def test_the_budget_cuts_the_crossing_file_and_leaves_out_the_rest():
    store = DictMemory({"/a": "a" * 10, "/b": "b" * 10, "/c": "c" * 10, "/d": "d"})
    _, _, capture, _ = run_memory(store, [text("ok")], max_bytes=15)
    assert capture.parts()[2:] == ["system:memory:/a", "system:memory:/b"]
    first, second = capture.memory_texts()
    assert first == render("/a", "a" * 10)
    assert second == (render("/b", "b" * 5) + "\n[Memory is limited to 15 bytes a run; /b is cut "
                      "short; left out: /c, /d.]")


def test_a_cut_never_splits_a_character():
    store = DictMemory({"/e": "é" * 4})  # 8 bytes
    _, _, capture, _ = run_memory(store, [text("ok")], max_bytes=3)
    assert capture.memory_texts()[0].startswith(render("/e", "é") + "\n[Memory is limited")


def test_an_exact_fit_leaves_out_the_next_file_with_a_note():
    store = DictMemory({"/a": "1234", **{f"/z{i:02}": "z" for i in range(12)}})
    _, _, capture, _ = run_memory(store, [text("ok")], max_bytes=4)
    (only,) = capture.memory_texts()
    assert only.startswith(render("/a", "1234"))
    assert "left out: /z00, /z01" in only and "/z09 and 2 more." in only
    assert "cut short" not in only


def test_a_file_not_seen_whole_cannot_be_replaced_in_that_run():
    store = DictMemory({"/a": "a" * 10, "/b": "b" * 10, "/c": "c"})
    _, state, _, _ = run_memory(
        store, [tool_call(TOOL_NAME, {"path": p, "content": "new"}, call_id=p) for p in
                ("/b", "/c", "/a", "/d")] + [text("ok")],
        agent=memory_agent(writable=True), max_bytes=15)
    results = {r.tool_use_id: r for m in state.messages for r in m.tool_results}
    assert results["/b"].is_error and "did not fit whole" in results["/b"].content
    assert results["/c"].is_error
    assert not results["/a"].is_error and not results["/d"].is_error
    assert store.files == {"/a": "new", "/b": "b" * 10, "/c": "c", "/d": "new"}


def test_memory_is_loaded_once_per_run_however_many_turns():
    store = DictMemory({AGENTS_MD: "v1"})
    _, _, capture, _ = run_memory(store, [tool_call("echo", {"text": "a"}),
                                          tool_call("echo", {"text": "b"}), text("ok")])
    assert store.loads == 1
    assert len(capture.requests) == 3
    assert all(capture.memory_texts(i) == [render(AGENTS_MD, "v1")] for i in range(3))


def test_update_memory_writes_the_store_but_this_run_keeps_its_snapshot():
    store = DictMemory({AGENTS_MD: "v1"})
    step, state, capture, model = run_memory(
        store, [tool_call(TOOL_NAME, {"path": AGENTS_MD, "content": "v2"}, call_id="m"),
                tool_call(TOOL_NAME, {"path": "/memories/new.md", "content": "n"}), text("ok")],
        agent=memory_agent(writable=True))
    assert step == FinalOutput("end_turn")
    assert store.files == {AGENTS_MD: "v2", "/memories/new.md": "n"}
    result = state.messages[2].tool_results[0]
    assert not result.is_error
    assert result.content == f"Saved {AGENTS_MD} (2 bytes). It shows in your memory from the " \
                             "next run."
    for i in range(3):  # never mid-run
        assert capture.memory_texts(i) == [render(AGENTS_MD, "v1")]
    assert TOOL_NAME in [t.name for t in model.calls[0].tools]

    # The next run loads afresh and sees both changes.
    _, _, next_capture, _ = run_memory(store, [text("ok")])
    assert next_capture.memory_texts() == [render(AGENTS_MD, "v2"),
                                           render("/memories/new.md", "n")]


def test_a_continued_run_keeps_the_snapshot_it_started_with():
    """A slice boundary or a resume rebuilds the chain from the checkpointed state: the memory
    snapshot travels in it, so a write made mid-run still does not show."""
    store = DictMemory({AGENTS_MD: "v1"})
    _, state, _, _ = run_memory(store, [tool_call(TOOL_NAME, {"path": AGENTS_MD, "content": "v2"}),
                                        text("paused here")], agent=memory_agent(writable=True))
    restored = state_from_json(state_to_json(state), messages=[*state.messages,
                                                               Message.user("go on")],
                               turn=state.turn)
    assert isinstance(restored.private["memory"], dict)  # as loaded from state_json
    _, _, capture, _ = run_memory(store, [text("ok")], state=restored)
    assert store.loads == 1
    assert capture.memory_texts() == [render(AGENTS_MD, "v1")]
    assert store.files[AGENTS_MD] == "v2"


def test_without_writable_there_is_no_tool():
    store = DictMemory({AGENTS_MD: "v1"})
    _, state, _, model = run_memory(
        store, [tool_call(TOOL_NAME, {"path": AGENTS_MD, "content": "x"}), text("ok")])
    assert TOOL_NAME not in [t.name for t in model.calls[0].tools]
    assert state.messages[2].tool_results[0].is_error
    assert store.files[AGENTS_MD] == "v1"


def test_the_allowlist_withholds_the_tool_but_memory_still_loads():
    agent = memory_agent(writable=True, allowed_tools=("echo",))
    _, _, capture, model = run_memory(DictMemory({AGENTS_MD: "v1"}), [text("ok")], agent=agent)
    assert [t.name for t in model.calls[0].tools] == ["echo"]
    assert capture.memory_texts() == [render(AGENTS_MD, "v1")]


@pytest.mark.parametrize("args, message", [
    ({"path": "memories/x.md", "content": "x"}, "must be absolute"),
    ({"path": "/memories/../x.md", "content": "x"}, "normalized"),
    ({"path": "/memories/x.md", "content": "x" * 11}, "at most 10 bytes"),
])
def test_bad_writes_are_error_results(args, message):
    store = DictMemory()
    _, state, _, _ = run_memory(store, [tool_call(TOOL_NAME, args), text("ok")],
                                agent=memory_agent(writable=True), max_bytes=10)
    result = state.messages[2].tool_results[0]
    assert result.is_error and message in result.content
    assert store.files == {}


def test_a_refused_write_is_an_error_result():
    store = DictMemory(refuse="An agent has at most 2 memory files; delete one first.")
    _, state, _, _ = run_memory(store, [tool_call(TOOL_NAME, {"path": "/a", "content": "x"}),
                                        text("ok")], agent=memory_agent(writable=True))
    result = state.messages[2].tool_results[0]
    assert result.is_error and result.content.startswith("An agent has at most 2")


def test_a_failed_load_runs_without_memory_and_refuses_writes(spans):
    store = BrokenMemory({AGENTS_MD: "v1"})
    step, state, capture, _ = run_memory(
        store, [tool_call(TOOL_NAME, {"path": AGENTS_MD, "content": "blind"}), text("ok")],
        agent=memory_agent(writable=True))
    assert step == FinalOutput("end_turn")
    assert capture.parts() == ["system:agent", "system:todo"]
    result = state.messages[2].tool_results[0]
    assert result.is_error and "cannot be written" in result.content
    assert store.files[AGENTS_MD] == "v1"
    (event,) = events_named(spans, telemetry.EVENT_STORE_LOAD_FAILED)
    assert event.attributes[telemetry.ATTR_MIDDLEWARE_NAME] == "memory"
    assert event.attributes[telemetry.ATTR_REASON] == "TimeoutError"


def test_the_load_is_reported_on_its_before_run_span(spans):
    run_memory(DictMemory({"/a": "aaaa", "/b": "bb"}), [text("ok")], max_bytes=3)
    (hook,) = spans_named(spans, f"{telemetry.SPAN_BEFORE_RUN}.memory")
    assert hook.attributes[telemetry.ATTR_MEMORY_FILES] == 2
    assert hook.attributes[telemetry.ATTR_MEMORY_BYTES] == 6
    assert hook.attributes[telemetry.ATTR_MEMORY_OMITTED] == 1  # /b; /a is cut, not left out


def test_a_write_is_reported_without_content(spans):
    run_memory(DictMemory(), [tool_call(TOOL_NAME, {"path": "/a", "content": "secret"}),
                              text("ok")], agent=memory_agent(writable=True))
    (event,) = events_named(spans, telemetry.EVENT_MEMORY_WRITTEN)
    assert dict(event.attributes) == {telemetry.ATTR_MIDDLEWARE_NAME: "memory",
                                      telemetry.ATTR_MEMORY_BYTES: 6}


@pytest.mark.parametrize("path", ["/memories/AGENTS.md", "/a", "/notes/2024 plan.md",
                                  "/" + "x" * 254])
def test_valid_paths(path):
    assert path_problem(path) is None


@pytest.mark.parametrize("path", ["", "relative.md", "/", "/a/", "//a", "/a//b", "/a/./b",
                                  "/a/../b", "/..", "/a\x00b", "/a\nb", "/" + "x" * 255])
def test_invalid_paths(path):
    assert path_problem(path)


def test_the_slot_is_skipped_without_a_store_and_sits_after_prompt_cache():
    names = [s.name for s in stack_slots(StackConfig(agent=memory_agent()))]
    assert names.index("memory") == names.index("prompt_cache") + 1
    (slot,) = [s for s in stack_slots(StackConfig(agent=memory_agent())) if s.name == "memory"]
    assert slot.middleware is None and slot.why.startswith("skipped")
    cfg = StackConfig(agent=memory_agent(), deps=RunDeps(memory=DictMemory(),
                                                         memory_max_bytes=99))
    (built,) = [s.middleware for s in stack_slots(cfg) if s.name == "memory"]
    assert isinstance(built, MemoryMiddleware) and built.max_bytes == 99 and not built.writable


@pytest.mark.parametrize("bad", [0, -1, 1.5])
def test_a_bad_budget_is_rejected_at_construction(bad):
    with pytest.raises(ValueError):
        MemoryMiddleware(store=DictMemory(), max_bytes=bad)


def test_a_malformed_snapshot_is_invalid_content():
    from harness.errors import InvalidContent

    with pytest.raises(InvalidContent):
        MemorySnapshot.from_json({"blocks": 3})


def test_memory_falls_after_the_cache_breakpoint_and_the_skills_index_before_it():
    from harness.stores import SkillSpec

    class OneSkill:
        def load(self):
            return [SkillSpec(id="s", name="pdf", description="PDFs.", instructions="i")]

    agent = make_agent(config={"skills": [SKILL_IDS[0]]})
    model = ScriptedModel([text("ok")])
    deps = RunDeps(memory=DictMemory({AGENTS_MD: "v1"}), skills=OneSkill(), provider=model)
    capture = Capture()
    stack = [*default_stack(StackConfig(agent=agent, deps=deps)), capture]
    run(make_loop(model, agent=agent, middlewares=stack))
    system = capture.requests[0].system
    marked = [sb.part for sb in system if sb.block.cache_control is not None]
    assert marked == ["system:skills"]
    assert [sb.part for sb in system] == ["system:agent", "system:skills", "system:todo",
                                          "system:memory:/memories/AGENTS.md"]
