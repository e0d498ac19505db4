"""harness.inspect: the next request part by part, assembled through the real chain into a
capture handler — every contributor, tool and message; parts + framing = the total; no model
called; excluded parts shown with their pairs; stale overrides, the cache breakpoint and
would_compact reported."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from harness.context import Override
from harness.deps import RunDeps, StackConfig
from harness.inspect import inspect
from harness.messages import Request, Response
from harness.providers.scripted import ScriptedModel
from harness.stack import default_stack
from harness.state import State
from harness.stores import MemoryFile, SkillSpec
from harness.tokens.base import ESTIMATE
from harness.tokens.tokenizers import tokenizer_for
from harness.tools import builtin_registry
from tests.support.files import MemoryFiles
from tests.support.harness import SKILL_IDS, make_agent, make_loop
from tests.support.summarization import MemorySummaries, stored_history


@dataclass
class Overrides:
    overrides: list[Override] = field(default_factory=list)

    def load(self) -> list[Override]:
        return list(self.overrides)


class Memory:
    def load(self) -> list[MemoryFile]:
        return [MemoryFile(path="/memories/AGENTS.md", content="The user likes tables.")]

    def write(self, path: str, content: str) -> None:
        raise AssertionError("inspect writes nothing")


class Skills:
    def load(self) -> list[SkillSpec]:
        return [SkillSpec(id="s1", name="counting", description="Count things.",
                          instructions="Count.")]


class NoCalls:
    """A provider that fails the test on any call (the run's and the summarizer's alike)."""

    name = "scripted"

    def complete(self, request: Request) -> Response:
        raise AssertionError(f"inspect called the provider: {request.metadata}")


def inspected(*overrides: Override, history=None, tokenizer=ESTIMATE, **options):
    agent = make_agent(config={"skills": [SKILL_IDS[0]], "memory": {"writable": True},
                               "summarization": options.pop("summarization", {})})
    provider = NoCalls()
    files = MemoryFiles({"/notes.md": "hi"})
    deps = RunDeps(memory=Memory(), skills=Skills(), files=files, summaries=MemorySummaries(),
                   overrides=Overrides(list(overrides)), provider=provider, model="script",
                   tools=tuple(builtin_registry().all()), tokenizer=tokenizer)
    loop = make_loop(provider, agent=agent, middlewares=default_stack(
        StackConfig(agent=agent, deps=deps, capture_only=True)))
    state = State(messages=list(history if history is not None else stored_history(3)))
    return inspect(loop, state, tokenizer, **options), files


def test_every_contributor_tool_and_message_is_a_part_and_they_sum_to_the_total():
    snapshot, files = inspected()
    assert [p.id for p in snapshot.system] == [
        "system:agent", "system:skills", "system:filesystem", "system:todo",
        "system:memory:/memories/AGENTS.md"]
    assert [p.id for p in snapshot.tools] == [
        "tool:echo", "tool:word_count", "tool:load_skill", "tool:ls", "tool:read_file",
        "tool:write_file", "tool:edit_file", "tool:glob", "tool:grep", "tool:write_todos",
        "tool:update_memory"]
    assert [p.id for p in snapshot.messages] == [f"message:{i}" for i in range(1, 10)]
    parts = [*snapshot.system, *snapshot.tools, *snapshot.messages]
    assert all(p.included and p.override is None and not p.stale for p in parts)
    assert sum(p.tokens for p in parts) + snapshot.framing == snapshot.total_after
    # The estimate of the captured request, as the spec's success criterion words it.
    assert snapshot.total_after == ESTIMATE.request(
        snapshot.request.to_provider_request()) == snapshot.total_before
    assert snapshot.counted == "estimate" and files.writes == []


def test_a_tokenizer_counts_the_parts_and_the_identity_still_holds():
    snapshot, _ = inspected(tokenizer=tokenizer_for("anthropic:claude-sonnet-4-5"))
    parts = [*snapshot.system, *snapshot.tools, *snapshot.messages]
    assert snapshot.counted == "tokenizer"
    assert sum(p.tokens for p in parts) + snapshot.framing == snapshot.total_after
    assert snapshot.total_after == tokenizer_for("anthropic:claude-sonnet-4-5").request(
        snapshot.request.to_provider_request())


def test_excluded_and_replaced_parts_show_with_what_they_were():
    snapshot, _ = inspected(
        Override(part="message:3", action="exclude"), Override(part="tool:echo", action="exclude"),
        Override(part="system:agent", action="replace", replacement="Be terse."),
        Override(part="message:9", action="replace", replacement="Briefly?"))
    by_id = {p.id: p for p in (*snapshot.system, *snapshot.tools, *snapshot.messages)}
    assert not by_id["message:3"].included and not by_id["message:2"].included  # its pair
    assert by_id["message:3"].paired_with == ("message:2",)
    assert not by_id["tool:echo"].included and by_id["tool:echo"].override == "exclude"
    agent = by_id["system:agent"]
    assert agent.included and agent.content == "Be terse." and agent.override == "replace"
    assert agent.original == "You are a test agent."
    assert by_id["message:9"].content == '[{"type": "text", "text": "Briefly?"}]'
    assert snapshot.total_after < snapshot.total_before
    sent = snapshot.request.to_provider_request()
    assert [m.seq for m in snapshot.request.request.messages] == [1, 4, 5, 6, 7, 8, 9]
    assert "echo" not in [t.name for t in sent.tools] and sent.system[0].text == "Be terse."
    included = [p for p in by_id.values() if p.included]
    assert sum(p.tokens for p in included) + snapshot.framing == snapshot.total_after
    assert snapshot.overrides_active == 4 and snapshot.stale == ()


def test_stale_overrides_are_kept_listed_and_do_nothing():
    snapshot, _ = inspected(Override(part="tool:old_tool", action="exclude"),
                            Override(part="message:42", action="exclude"),
                            Override(part="summary", action="exclude"))
    assert snapshot.stale == ("tool:old_tool", "message:42", "summary")
    assert snapshot.overrides_active == 0
    assert [p.id for p in snapshot.tools if p.stale] == ["tool:old_tool"]
    assert [p.id for p in snapshot.messages if p.stale] == ["message:42", "summary"]
    assert snapshot.total_after == snapshot.total_before


def test_the_cache_breakpoint_marks_the_stable_prefix_and_moves_with_an_exclude():
    snapshot, _ = inspected()
    assert snapshot.cache_breakpoint == 1  # agent, skills | file listing, todo, memory
    assert [p.cached_prefix for p in snapshot.system] == [True, True, False, False, False]
    assert all(p.cached_prefix for p in snapshot.tools)
    snapshot, _ = inspected(Override(part="system:skills", action="exclude"))
    assert snapshot.cache_breakpoint == 0
    assert [p.cached_prefix for p in snapshot.system] == [True, False, False, False, False]


def test_a_call_that_would_compact_shows_its_summary_and_what_it_stands_for():
    snapshot, _ = inspected(summarization={"trigger_tokens": 100, "keep_messages": 2})
    assert snapshot.would_compact
    summary, *messages = snapshot.messages
    assert [p.id for p in messages] == [f"message:{i}" for i in range(1, 10)]
    assert summary.id == "summary" and summary.kind == "summary" and summary.included
    assert summary.label.startswith(f"the summary of #1–#{snapshot.compaction.summary_through_seq}")
    assert "up to 1,024 tokens: its text is not known yet" in summary.label
    through = snapshot.compaction.summary_through_seq
    assert [p.summarized for p in messages] == [
        int(p.id.split(":")[1]) <= through for p in messages]
    assert not any(p.included for p in messages if p.summarized)
    assert all(p.included for p in messages if not p.summarized)
    parts = [p for p in (*snapshot.system, *snapshot.tools, *snapshot.messages) if p.included]
    assert sum(p.tokens for p in parts) + snapshot.framing == snapshot.total_after


def test_a_summary_override_shows_on_the_summary_part_and_is_stale_without_one():
    replaced = Override(part="summary", action="replace", replacement="Echoed it all.")
    snapshot, _ = inspected(replaced, summarization={"trigger_tokens": 100, "keep_messages": 2})
    summary = snapshot.part("summary")
    assert (summary.override, summary.stale, summary.included) == ("replace", False, True)
    assert "replaced by an override" in summary.label
    assert "Echoed it all." in summary.content and snapshot.stale == ()
    snapshot, _ = inspected(replaced)  # under the budget: no summary is sent
    assert snapshot.stale == ("summary",) and not snapshot.would_compact


def test_a_repaired_call_is_shown_as_a_part_of_its_own():
    history = stored_history(3)[:-3]  # ends with a call whose results never came
    snapshot, _ = inspected(history=history)
    assert snapshot.messages[-1].id == "repair:1" and snapshot.messages[-1].included
    assert snapshot.messages[-1].kind == "message"


@pytest.mark.parametrize("part", ["system:agent", "tool:read_file", "message:4"])
def test_a_part_looks_up_by_id(part):
    snapshot, _ = inspected()
    assert snapshot.part(part).id == part and snapshot.part("message:99") is None
    # Its repr names it without its content: a repr ends up in logs and failure output.
    found = snapshot.part(part)
    assert repr(found).startswith(f"Part(id={part!r}, tokens={found.tokens}")
    assert found.content and found.content not in repr(found)
    assert found.preview not in repr(snapshot)


def test_the_provider_counter_gives_the_totals_when_asked():
    class Counting(NoCalls):
        def count_tokens(self, request: Request) -> int:
            return 1234

    agent = make_agent()
    provider = Counting()
    loop = make_loop(provider, agent=agent, middlewares=default_stack(StackConfig(
        agent=agent, deps=RunDeps(provider=provider), capture_only=True)))
    snapshot = inspect(loop, State(messages=list(stored_history(1))), ESTIMATE,
                       provider_count=True)
    assert snapshot.counted == "provider" and snapshot.total_after == 1234
    parts = [*snapshot.system, *snapshot.tools, *snapshot.messages]
    assert sum(p.tokens for p in parts) + snapshot.framing == 1234


def test_nothing_is_called_even_when_the_script_would_fail():
    agent = make_agent()
    model = ScriptedModel([])  # any call raises ScriptExhausted
    loop = make_loop(model, agent=agent, middlewares=default_stack(StackConfig(
        agent=agent, deps=RunDeps(provider=model), capture_only=True)))
    inspect(loop, State(messages=list(stored_history(1))), ESTIMATE)
    assert model.calls == []
