"""SkillsMiddleware: an index of the agent's skills, a tool to load one, and the tools it brings.

``before_run`` reads the agent's skills once (a :class:`~harness.stores.SkillStore`). Every model
call carries the index (part ``system:skills``: each skill's name and description);
``load_skill(name)`` answers with the skill's full instructions, so they enter the history only
when a task needs them.

Widening. A skill's ``allowed_tools`` names registry tools that come with it. Such a tool is held
back until a skill naming it is loaded: before that it is not offered (and a call to it finds no
tool); once loaded, it is offered for the rest of the run — the loaded skills and the tools each
brought are kept in typed private state, so a resumed run keeps them. Widening never passes the
allowlist: the allowlist slot is last and filters whatever this middleware adds, so a skill only
brings tools the agent's ``allowed_tools`` permits (any, when it is null). A tool the agent may
not use stays out whatever a skill names; ``null`` or ``[]`` brings nothing; tools a middleware
provides (``write_todos``, ``update_memory``) are never held back.

The slot is first: after the agent's own prompt the index is the most stable block, and as the
outermost model wrapper it sees the whole tool list it holds tools back from.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from harness import telemetry
from harness.chain import ModelHandler, ModelRequest
from harness.context import SourcedBlock
from harness.deps import StackConfig
from harness.messages import Response, TextBlock
from harness.middleware._stores import load_or_none
from harness.state import State, load_private, store_private
from harness.stores import SkillSpec, SkillStore
from harness.tools.base import Tool, ToolContext, ToolResult, tool_error

NAME = "skills"
TOOL_NAME = "load_skill"
PART = "system:skills"

WHY = ("skipped unless the agent's config names skills and load_skill is allowed; the skills "
       "index and load_skill, most stable first, and the tools a loaded skill brings")

INDEX_HEADER = ("You have the skills below. When a task matches one, first call load_skill with "
                "its name to read its full instructions, then follow them.")

DESCRIPTION = """Load one of your skills by name: returns the skill's full instructions (and \
makes the tools the skill brings available). Load a skill before starting a task it covers."""

SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string", "description": "The skill's name, as listed."}},
    "required": ["name"],
    "additionalProperties": False,
}


@dataclass(kw_only=True)
class LoadedSkills:
    # skill name -> the registry tools it brought, in load order
    granted: dict[str, list[str]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"granted": {name: list(tools) for name, tools in self.granted.items()}}

    def tools(self) -> set[str]:
        return {tool for tools in self.granted.values() for tool in tools}


def render_index(skills: Sequence[SkillSpec]) -> str:
    return "\n".join([INDEX_HEADER, *(f"- {s.name}: {s.description}" for s in skills)])


class SkillsMiddleware:
    name = NAME

    def __init__(self, *, store: SkillStore, tools: Sequence[Tool] = ()) -> None:
        self.store = store
        self.registry = {t.name: t for t in tools}  # where a skill's tools come from
        self._skills: dict[str, SkillSpec] = {}
        self._held: frozenset[str] = frozenset()
        self._index = ""
        self._tool = Tool(name=TOOL_NAME, description=DESCRIPTION, input_schema=SCHEMA,
                          fn=self._load)

    def before_run(self, state: State) -> None:
        skills = load_or_none(self.store.load, middleware=NAME, run_id=state.run_id) or []
        self._skills = {s.name: s for s in skills}
        self._held = frozenset(t for s in skills for t in self._brings(s))
        self._index = render_index(skills) if skills else ""
        telemetry.set_attributes({telemetry.ATTR_SKILLS_COUNT: len(skills)})

    def system_blocks(self, state: State) -> list[SourcedBlock]:
        if not self._index:
            return []
        return [SourcedBlock(part=PART, block=TextBlock(text=self._index))]

    def provide_tools(self, state: State) -> list[Tool]:
        if not self._skills:
            return []
        granted = _loaded(state).tools()
        return [self._tool, *(t for name, t in self.registry.items() if name in granted)]

    def wrap_model_call(self, req: ModelRequest, next: ModelHandler) -> Response:
        hidden = self._held - _loaded(req.state).tools()
        if hidden:
            req = replace(req, tools=tuple(t for t in req.tools if t.name not in hidden))
        return next(req)

    def _brings(self, skill: SkillSpec) -> list[str]:
        return [t for t in dict.fromkeys(skill.allowed_tools or ()) if t in self.registry]

    def _load(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        skill = self._skills.get(args["name"])
        if skill is None:
            known = ", ".join(sorted(self._skills)) or "none"
            return tool_error(f"There is no skill named {args['name']!r}. Skills: {known}.")
        tools = self._brings(skill)
        loaded = _loaded(ctx.state)
        loaded.granted[skill.name] = tools
        store_private(ctx.state, NAME, loaded)
        telemetry.record_event(telemetry.EVENT_SKILL_LOADED, {
            telemetry.ATTR_SKILL_NAME: skill.name, telemetry.ATTR_SKILL_TOOLS: tools,
        })
        text = f'<skill name="{skill.name}">\n{skill.instructions}\n</skill>'
        if tools:
            text += ("\nTools this skill brings, where this agent may use them: "
                     + ", ".join(tools) + ".")
        return ToolResult(content=text)


def _loaded(state: State) -> LoadedSkills:
    return load_private(state, NAME, LoadedSkills)[0]


def from_config(cfg: StackConfig) -> SkillsMiddleware | None:
    if cfg.deps.skills is None or not cfg.agent.config.skills \
            or not cfg.agent.allows(TOOL_NAME):
        return None
    return SkillsMiddleware(store=cfg.deps.skills, tools=cfg.deps.tools)
