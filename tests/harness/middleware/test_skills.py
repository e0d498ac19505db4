"""SkillsMiddleware: the system:skills index, load_skill, and widening that holds a skill's tools
back until it is loaded — and can never pass the allowlist slot."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from harness import telemetry
from harness.agent import AgentSpec
from harness.deps import RunDeps, StackConfig
from harness.messages import Message
from harness.middleware.allowlist import ToolAllowlistMiddleware
from harness.middleware.skills import (
    INDEX_HEADER,
    PART,
    TOOL_NAME,
    SkillsMiddleware,
    render_index,
)
from harness.providers.scripted import ScriptedModel, text, tool_call
from harness.stack import default_stack, stack_slots
from harness.state import State, state_from_json, state_to_json
from harness.steps import FinalOutput
from harness.stores import SkillSpec
from harness.tools import builtin_registry
from tests.support.harness import SKILL_IDS, CountingTool, events_named, make_agent, make_loop, run

PDF = SkillSpec(id="s1", name="pdf-forms", description="Fill in PDF forms.",
                instructions="1. Read the form.\n2. Fill every field.")
COUNTING = SkillSpec(id="s2", name="counting", description="Count things.",
                     instructions="Count with the tool.", allowed_tools=("word_count", "danger"))


@dataclass
class ListSkills:
    skills: list[SkillSpec] = field(default_factory=list)
    loads: int = 0

    def load(self) -> list[SkillSpec]:
        self.loads += 1
        return list(self.skills)


class BrokenSkills(ListSkills):
    def load(self) -> list[SkillSpec]:
        raise TimeoutError("statement timeout")


def skills_agent(*, skills=SKILL_IDS, **fields) -> AgentSpec:
    return make_agent(config={"skills": list(skills)}, **fields)


def run_skills(steps, *, store=None, agent: AgentSpec | None = None, extra=(),
               state: State | None = None):
    """A run over the default stack with a skill store and a registry of echo, word_count and
    the given extra tools; returns the step, state and the model (its recorded requests)."""
    agent = agent or skills_agent()
    registry = [*builtin_registry().all(), *extra]
    deps = RunDeps(skills=store or ListSkills([PDF, COUNTING]), tools=tuple(registry))
    stack = default_stack(StackConfig(agent=agent, deps=deps))
    base = [t for t in registry if agent.allowed_tools is None or t.name in agent.allowed_tools]
    model = ScriptedModel(list(steps))
    step, state, _ = run(make_loop(model, agent=agent, middlewares=stack, tools=base), state)
    return step, state, model


def offered(model, call: int) -> list[str]:
    return [t.name for t in model.calls[call].tools]


def test_the_index_lists_names_and_descriptions_right_after_the_agent_prompt():
    _, _, model = run_skills([text("ok")])
    system = [b.text for b in model.calls[0].system]
    assert system[1] == render_index([PDF, COUNTING])
    assert system[1] == (f"{INDEX_HEADER}\n- pdf-forms: Fill in PDF forms.\n"
                         "- counting: Count things.")
    assert PART == "system:skills"


def test_load_skill_returns_the_instructions():
    step, state, model = run_skills([tool_call(TOOL_NAME, {"name": "pdf-forms"}), text("ok")])
    assert step == FinalOutput("end_turn")
    result = state.messages[2].tool_results[0]
    assert not result.is_error
    assert result.content == '<skill name="pdf-forms">\n1. Read the form.\n2. Fill every ' \
                             'field.\n</skill>'
    assert TOOL_NAME in offered(model, 0)


def test_an_unknown_skill_is_an_error_result():
    _, state, _ = run_skills([tool_call(TOOL_NAME, {"name": "nope"}), text("ok")])
    result = state.messages[2].tool_results[0]
    assert result.is_error
    assert result.content == "There is no skill named 'nope'. Skills: counting, pdf-forms."


def test_a_loaded_skill_widens_the_tools_with_those_it_brings(spans):
    danger = CountingTool(name="danger")
    _, state, model = run_skills(
        [tool_call("word_count", {"text": "too early"}, call_id="early"),
         tool_call(TOOL_NAME, {"name": "counting"}),
         tool_call("word_count", {"text": "one two"}, call_id="late"),
         tool_call("danger", {}, call_id="d"), text("ok")],
        extra=[danger.tool])
    # Held back until the skill is loaded: not offered, and a call finds no tool.
    assert offered(model, 0) == ["echo", "load_skill", "write_todos"]
    early = state.messages[2].tool_results[0]
    assert early.is_error and early.content.startswith("There is no tool named 'word_count'")
    # Offered from the next call on, for the rest of the run.
    assert "Tools this skill brings" in state.messages[4].tool_results[0].content
    for call in (2, 3, 4):
        assert offered(model, call) == ["echo", "word_count", "danger", "load_skill",
                                        "write_todos"]
    assert state.messages[6].tool_results[0].content == "2"
    assert danger.calls == [{}]
    (event,) = events_named(spans, telemetry.EVENT_SKILL_LOADED)
    assert event.attributes[telemetry.ATTR_SKILL_NAME] == "counting"
    assert list(event.attributes[telemetry.ATTR_SKILL_TOOLS]) == ["word_count", "danger"]


def test_skill_widening_cannot_pass_the_allowlist(spans):
    """The agent may not use `danger`; a skill naming it changes nothing: never offered, and a
    call to it is refused by the allowlist slot without running."""
    danger = CountingTool(name="danger")
    agent = skills_agent(allowed_tools=("echo", "word_count", "load_skill"))
    step, state, model = run_skills(
        [tool_call(TOOL_NAME, {"name": "counting"}), tool_call("danger", {}, call_id="d"),
         tool_call("word_count", {"text": "a b c"}, call_id="w"), text("ok")],
        agent=agent, extra=[danger.tool])
    assert step == FinalOutput("end_turn")
    assert all("danger" not in offered(model, i) for i in range(len(model.calls)))
    assert offered(model, 0) == ["echo", "load_skill"]  # word_count held back until loaded
    assert offered(model, 1) == ["echo", "word_count", "load_skill"]
    refused = state.messages[4].tool_results[0]
    assert refused.is_error and refused.content == \
        "The tool 'danger' is not available to this agent."
    assert danger.calls == []
    assert state.messages[6].tool_results[0].content == "3"
    rewritten = events_named(spans, telemetry.EVENT_REQUEST_REWRITTEN)
    assert {e.attributes[telemetry.ATTR_REASON] for e in rewritten} == {
        "tools_not_allowed:danger"}
    (short,) = events_named(spans, telemetry.EVENT_SHORT_CIRCUITED)
    assert short.attributes[telemetry.ATTR_GEN_AI_TOOL_NAME] == "danger"


def test_the_skills_middleware_alone_cannot_widen_past_an_allowlist_behind_it():
    """Composed by hand, without the rest of the stack: whatever the skill adds, the allowlist
    behind it drops."""
    danger = CountingTool(name="danger")
    skills = SkillsMiddleware(store=ListSkills([COUNTING]), tools=[danger.tool])
    allowlist = ToolAllowlistMiddleware(allowed=("load_skill",))
    model = ScriptedModel([tool_call(TOOL_NAME, {"name": "counting"}),
                           tool_call("danger", {}), text("ok")])
    agent = skills_agent(allowed_tools=("load_skill",))
    _, state, _ = run(make_loop(model, agent=agent, middlewares=[skills, allowlist], tools=[]))
    assert [offered(model, i) for i in range(3)] == [["load_skill"]] * 3
    assert state.messages[4].tool_results[0].is_error
    assert danger.calls == []


def test_a_resumed_run_keeps_its_loaded_skills():
    _, state, _ = run_skills([tool_call(TOOL_NAME, {"name": "counting"}), text("paused")])
    restored = state_from_json(state_to_json(state), messages=[*state.messages,
                                                               Message.user("go on")],
                               turn=state.turn)
    _, _, model = run_skills([tool_call("word_count", {"text": "x"}), text("ok")],
                             state=restored)
    assert "word_count" in offered(model, 0)


def test_a_skill_without_allowed_tools_brings_none_and_unknown_names_are_ignored():
    plain = SkillSpec(id="s3", name="plain", description="d", instructions="i",
                      allowed_tools=("no_such_tool",))
    _, state, model = run_skills([tool_call(TOOL_NAME, {"name": "pdf-forms"}),
                                  tool_call(TOOL_NAME, {"name": "plain"}), text("ok")],
                                 store=ListSkills([PDF, plain]), agent=skills_agent())
    assert offered(model, 2) == offered(model, 0) == ["echo", "word_count", "load_skill",
                                                      "write_todos"]
    assert "Tools this skill brings" not in state.messages[4].tool_results[0].content


def test_the_store_is_read_once_per_run():
    store = ListSkills([PDF])
    run_skills([tool_call("echo", {"text": "a"}), tool_call("echo", {"text": "b"}),
                text("ok")], store=store)
    assert store.loads == 1


def test_no_skills_in_the_store_means_no_index_and_no_tool():
    _, _, model = run_skills([text("ok")], store=ListSkills([]))
    assert TOOL_NAME not in offered(model, 0)
    assert len(model.calls[0].system) == 2  # the agent's prompt and the todo list


def test_a_failed_load_runs_without_skills(spans):
    step, _, model = run_skills([text("ok")], store=BrokenSkills())
    assert step == FinalOutput("end_turn")
    assert TOOL_NAME not in offered(model, 0)
    (event,) = events_named(spans, telemetry.EVENT_STORE_LOAD_FAILED)
    assert event.attributes[telemetry.ATTR_MIDDLEWARE_NAME] == "skills"


@pytest.mark.parametrize("agent, deps", [
    (skills_agent(), RunDeps()),  # no store
    (make_agent(), RunDeps(skills=ListSkills([PDF]))),  # no skills in the config
    (skills_agent(allowed_tools=("echo",)), RunDeps(skills=ListSkills([PDF]))),
])
def test_the_slot_is_skipped_with_a_reason(agent, deps):
    (slot,) = [s for s in stack_slots(StackConfig(agent=agent, deps=deps)) if s.name == "skills"]
    assert slot.middleware is None and slot.why.startswith("skipped")


def test_the_slot_is_first_when_built():
    cfg = StackConfig(agent=skills_agent(), deps=RunDeps(skills=ListSkills([PDF])))
    assert isinstance(default_stack(cfg)[0], SkillsMiddleware)
