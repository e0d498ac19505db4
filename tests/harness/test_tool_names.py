"""harness.tool_names: the names are exactly the tools a run with every feature on offers its
model — the registry's and every middleware's, none missing, none extra."""

from __future__ import annotations

from harness.deps import RunDeps, StackConfig
from harness.providers.scripted import ScriptedModel, text
from harness.stack import default_stack
from harness.stores import MemoryFile, SkillSpec
from harness.tool_names import builtin_tool_names
from harness.tools import builtin_registry
from tests.support.files import MemoryFiles
from tests.support.harness import SKILL_IDS, make_agent, make_loop, run


class Memory:
    def load(self) -> list[MemoryFile]:
        return [MemoryFile(path="/memories/AGENTS.md", content="Be brief.")]

    def write(self, path: str, content: str) -> None:
        raise AssertionError("not written in this test")


class Skills:
    def load(self) -> list[SkillSpec]:
        return [SkillSpec(id=SKILL_IDS[0], name="release", description="Cut a release.",
                          instructions="Tag, build, publish.", allowed_tools=None)]


def offered_with_every_feature_on() -> list[str]:
    """The tool names a run's first model call is given, with files, writable memory, skills
    and subagents on and every tool allowed."""
    model = ScriptedModel([text("hi")])
    deps = RunDeps(memory=Memory(), skills=Skills(), files=MemoryFiles(), provider=model,
                   model="script", tools=tuple(builtin_registry().all()))
    agent = make_agent(allowed_tools=None, config={
        "skills": [SKILL_IDS[0]], "memory": {"writable": True},
        "subagents": [{"name": "helper", "description": "Helps.", "system_prompt": "Help."}]})
    stack = default_stack(StackConfig(agent=agent, deps=deps))
    run(make_loop(model, agent=agent, middlewares=stack))
    return [tool.name for tool in model.calls[0].tools]


def test_the_names_are_the_tools_a_run_offers():
    offered = offered_with_every_feature_on()
    assert len(offered) == len(set(offered))
    assert set(offered) == builtin_tool_names()


def test_the_names_include_the_registry_and_each_middleware_tool():
    assert builtin_tool_names() >= {*builtin_registry().names(), "ls", "read_file", "write_file",
                                    "edit_file", "glob", "grep", "write_todos", "task",
                                    "load_skill", "update_memory"}
