"""ContextOverridesMiddleware and where each override applies: message parts before
summarization (a call with its results), system parts before the cache breakpoint is chosen,
tool parts in the allowlist slot, the summary in compaction; loaded once per run; never an
invalid request; the chat span says how much was taken out."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from harness import context, telemetry
from harness.approval_values import PendingBatch
from harness.context import Override, OverrideSet
from harness.deps import RunDeps, StackConfig
from harness.history import is_summary, validate
from harness.messages import Message
from harness.providers.scripted import ScriptedModel, text, tool_call
from harness.stack import default_stack, stack_slots
from harness.state import State, state_from_json, state_to_json
from harness.steps import FinalOutput
from harness.stores import SkillSpec
from harness.tools import builtin_registry
from tests.support.harness import (
    SKILL_IDS,
    Recorder,
    events_named,
    make_agent,
    make_loop,
    run,
    spans_named,
)
from tests.support.summarization import (
    MemorySummaries,
    answers,
    make,
    size,
    small,
    stored_history,
)


@dataclass
class MemoryOverrides:
    """An in-memory OverrideStore; counts its loads."""

    overrides: list[Override] = field(default_factory=list)
    loads: int = 0

    def load(self) -> list[Override]:
        self.loads += 1
        return list(self.overrides)


class Skills:
    def load(self) -> list[SkillSpec]:
        return [SkillSpec(id="s1", name="counting", description="Count things.",
                          instructions="Count.", allowed_tools=("word_count",))]


def exclude(*parts: str) -> MemoryOverrides:
    return MemoryOverrides([Override(part=p, action="exclude") for p in parts])


def loop_over(model, store, *, agent=None, **deps):
    agent = agent or make_agent()
    every = tuple(builtin_registry().all())
    cfg = StackConfig(agent=agent, deps=RunDeps(overrides=store, provider=model, model="script",
                                                tools=every, **deps))
    return make_loop(model, agent=agent, middlewares=default_stack(cfg),
                     tools=builtin_registry().view(agent.allowed_tools))


def history() -> State:
    return State(messages=stored_history(3))  # task, 3 echo calls with results, answer, question


def test_the_slot_sits_right_before_summarization_and_needs_a_store():
    names = [s.name for s in stack_slots(StackConfig(agent=make_agent()))]
    assert names.index("context_overrides") == names.index("summarization") - 1
    built = [m.name for m in default_stack(StackConfig(
        agent=make_agent(), deps=RunDeps(overrides=MemoryOverrides(), provider=ScriptedModel())))]
    assert built.index("context_overrides") == built.index("summarization") - 1
    (slot,) = [s for s in stack_slots(StackConfig(agent=make_agent()))
               if s.name == "context_overrides"]
    assert slot.middleware is None and slot.why.startswith("skipped")


def test_an_excluded_message_is_not_sent_and_the_history_keeps_it():
    model = ScriptedModel([text("ok")])
    state = history()
    stored = list(state.messages)
    run(loop_over(model, exclude("message:8")), state)
    assert [m.seq for m in model.calls[0].messages] == [1, 2, 3, 4, 5, 6, 7, 9]
    assert state.messages[:len(stored)] == stored


def test_excluding_a_result_takes_its_call_along(spans):
    model = ScriptedModel([text("ok")])
    run(loop_over(model, exclude("message:3")), history())  # the first call's results
    sent = [m.seq for m in model.calls[0].messages]
    assert 2 not in sent and 3 not in sent and validate(model.calls[0].messages) == []
    [paired] = events_named(spans, telemetry.EVENT_CONTEXT_OVERRIDE_PAIRED)
    assert paired.attributes[telemetry.ATTR_CONTEXT_PART] == "message:2"


def test_a_replaced_message_is_sent_with_the_new_text():
    model = ScriptedModel([text("ok")])
    store = MemoryOverrides([Override(part="message:9", action="replace",
                                      replacement="What now, briefly?")])
    run(loop_over(model, store), history())
    assert model.calls[0].messages[-1].text == "What now, briefly?"


def test_a_set_that_would_leave_an_invalid_request_is_not_applied(spans):
    model = ScriptedModel([text("ok")])
    run(loop_over(model, exclude("message:1")), State(messages=[replace(Message.user("hi"),
                                                                          seq=1)]))
    assert [m.seq for m in model.calls[0].messages] == [1]  # sent whole rather than empty
    [dropped] = events_named(spans, telemetry.EVENT_CONTEXT_OVERRIDES_DROPPED)
    assert dropped.attributes[telemetry.ATTR_REASON] == "empty_history"


def test_overrides_are_loaded_once_per_run_and_a_continued_run_keeps_its_set():
    store = exclude("message:8")
    model = ScriptedModel([tool_call("echo", {"text": "x"}), tool_call("echo", {"text": "y"}),
                           text("ok")])
    run(loop_over(model, store), history())
    assert store.loads == 1 and len(model.calls) == 3
    assert all(8 not in [m.seq for m in c.messages] for c in model.calls)
    # A run cut after its first turn (a slice, a crash), continued from its checkpoint after
    # the overrides were changed: it keeps the set it started with and loads nothing.
    first = ScriptedModel([tool_call("echo", {"text": "x"})])
    _, state, _ = run(loop_over(first, store), history(), checkpointer=Recorder(keep_going=False))
    store.overrides = []
    resumed = state_from_json(state_to_json(state), messages=list(state.messages),
                              turn=state.turn)
    later = ScriptedModel([text("ok")])
    run(loop_over(later, store), resumed)
    assert 8 not in [m.seq for m in later.calls[0].messages]
    assert store.loads == 2  # the first run's load and the cut run's; the continuation none


def test_a_run_resuming_a_paused_batch_loads_the_set_saved_during_the_pause():
    store = exclude("message:8")
    state = history()
    run(loop_over(ScriptedModel([text("ok")]), store), state)
    state.pending_batch = PendingBatch()  # paused: a person decides, and edits the context
    store.overrides = []
    resumed = state_from_json(state_to_json(state), messages=list(state.messages),
                              turn=state.turn)
    loop_over(ScriptedModel([]), store).chain.before_run(resumed)
    assert store.loads == 2 and not context.active(resumed)


def test_a_resume_whose_reload_fails_keeps_the_set_it_had():
    class Broken(MemoryOverrides):
        def load(self) -> list[Override]:
            raise TimeoutError("the store is slow")

    state = history()
    run(loop_over(ScriptedModel([text("ok")]), exclude("message:8")), state)
    state.pending_batch = PendingBatch()
    resumed = state_from_json(state_to_json(state), messages=list(state.messages),
                              turn=state.turn)
    loop_over(ScriptedModel([]), Broken()).chain.before_run(resumed)
    assert [o.part for o in context.active(resumed).overrides] == ["message:8"]


def test_an_excluded_system_part_is_gone_before_the_cache_breakpoint_is_chosen():
    model = ScriptedModel([text("ok")])
    agent = make_agent(config={"skills": [SKILL_IDS[0]]})
    run(loop_over(model, exclude("system:skills"), agent=agent, skills=Skills()), history())
    system = model.calls[0].system
    assert all("Count things." not in b.text for b in system)
    marked = [i for i, b in enumerate(system) if b.cache_control is not None]
    assert marked == [0] and system[0].text == agent.system_prompt  # a block that is sent


def test_a_replaced_system_part_is_sent_with_the_new_text():
    model = ScriptedModel([text("ok")])
    store = MemoryOverrides([Override(part="system:agent", action="replace",
                                      replacement="Answer in French.")])
    run(loop_over(model, store), history())
    assert model.calls[0].system[0].text == "Answer in French."


def test_an_excluded_tool_is_not_offered_even_when_a_loaded_skill_brings_it():
    model = ScriptedModel([tool_call("load_skill", {"name": "counting"}), text("ok")])
    agent = make_agent(config={"skills": [SKILL_IDS[0]]})
    run(loop_over(model, exclude("tool:word_count", "tool:echo"), agent=agent, skills=Skills()),
        history())
    for call in model.calls:
        names = [t.name for t in call.tools]
        assert "word_count" not in names and "echo" not in names and "load_skill" in names


def test_the_chat_span_counts_the_overrides_and_the_tokens_they_took_out(spans):
    run(loop_over(ScriptedModel([text("ok")]), exclude("message:8", "tool:echo", "system:todo")),
        history())
    (chat,) = spans_named(spans, telemetry.SPAN_CHAT)
    assert chat.attributes[telemetry.ATTR_CONTEXT_OVERRIDES] == 3
    assert chat.attributes[telemetry.ATTR_CONTEXT_EXCLUDED_TOKENS] > 0
    run(loop_over(ScriptedModel([text("ok")]), MemoryOverrides()), history())
    last = spans_named(spans, telemetry.SPAN_CHAT)[-1]
    assert last.attributes[telemetry.ATTR_CONTEXT_OVERRIDES] == 0
    assert last.attributes[telemetry.ATTR_CONTEXT_EXCLUDED_TOKENS] == 0


def test_an_override_for_a_part_that_is_gone_is_reported_stale_and_does_nothing(spans):
    model = ScriptedModel([text("ok")])
    run(loop_over(model, exclude("message:99", "tool:old_tool", "system:memory:/gone.md")),
        history())
    stale = {e.attributes[telemetry.ATTR_CONTEXT_PART]
             for e in events_named(spans, telemetry.EVENT_CONTEXT_OVERRIDE_STALE)}
    assert stale == {"message:99", "tool:old_tool", "system:memory:/gone.md"}
    assert len(model.calls[0].messages) == 9


def test_the_summary_part_is_replaced_or_left_out_when_compaction_makes_one():
    full = stored_history()
    budget = size(full) // 2
    replaced = Override(part="summary", action="replace", replacement="Echoed ten payloads.")
    sent, store = compacted(replaced, budget, keep=4)
    assert is_summary(sent[0]) and sent[1:] == tuple(full[-4:])
    assert sent[0].text == "Summary of the earlier conversation: Echoed ten payloads."
    assert store.saved and store.saved[0].text != "Echoed ten payloads."  # the real one is kept
    # Left out: the kept messages alone, when they open with a user message.
    sent, _ = compacted(Override(part="summary", action="exclude"), budget, keep=1)
    assert sent == (full[-1],)


def test_a_summary_left_out_that_would_open_the_history_with_an_assistant_stays(spans):
    budget = size(stored_history()) // 2
    sent, _ = compacted(Override(part="summary", action="exclude"), budget, keep=4)
    assert is_summary(sent[0]) and validate(sent) == []  # the kept tail opens with a call
    [dropped] = events_named(spans, telemetry.EVENT_CONTEXT_OVERRIDES_DROPPED)
    assert dropped.attributes[telemetry.ATTR_CONTEXT_PART] == "summary"


def compacted(override: Override, budget: int, *, keep: int) -> tuple[tuple[Message, ...],
                                                                      MemorySummaries]:
    """The first request of a run over the stored history that compacts, with ``override``."""
    provider, store = answers(), MemorySummaries()
    loop = make(provider, options=small(budget, keep_messages=keep), store=store)
    state = State(messages=list(stored_history()))
    context.set_active(state, OverrideSet(overrides=(override,)))
    step, _, _ = run(loop, state)
    assert step == FinalOutput("end_turn")
    (sent,) = provider.run_requests
    return sent.messages, store


def test_a_tool_excluded_from_the_agent_is_not_offered_to_its_subagents():
    from tests.support.subagents import SUBAGENT_CONFIG, subagent_steps

    model = ScriptedModel(subagent_steps())
    agent = make_agent(config=SUBAGENT_CONFIG)
    run(loop_over(model, exclude("tool:word_count"), agent=agent), history())
    child_calls = model.calls[1:4]  # the subagent's own (its tools list word_count)
    assert [m.text for m in child_calls[0].messages] == ["Count: a b c"]
    for call in model.calls:
        assert "word_count" not in [t.name for t in call.tools]
