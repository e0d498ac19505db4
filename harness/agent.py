"""The harness's view of an agent: what the loop and the chain need, nothing of Django.

An agent's ``config`` document (middleware options) is validated against one JSON schema —
the API refuses what the harness would refuse — and parsed once, at the edge, into a frozen
:class:`AgentConfig`; nothing deeper reads the raw document.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from jsonschema import Draft202012Validator, TypeChecker, validators
from jsonschema.protocols import Validator

from harness.approvals import DECISIONS, Decision
from harness.errors import ConfigurationError

DEFAULT_MAX_TURNS = 50
DEFAULT_MAX_TOKENS = 4096
TOOL_NAME_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"

TOOL_LIST_SCHEMA: dict[str, Any] = {
    "type": "array",
    "items": {"type": "string", "pattern": TOOL_NAME_PATTERN},
    "uniqueItems": True,
    "maxItems": 256,
}

SUMMARIZATION_SCHEMA: dict[str, Any] = {
    "type": "object", "additionalProperties": False, "properties": {
        "enabled": {"type": "boolean"},
        "trigger_tokens": {"type": "integer", "minimum": 1},
        "trigger_fraction": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
        "keep_messages": {"type": "integer", "minimum": 1},
        "summary_max_tokens": {"type": "integer", "minimum": 16},
    }, "not": {"required": ["trigger_tokens", "trigger_fraction"]},
}

CONFIG_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "additionalProperties": False,  # a typo (max_turn) is an error, not an ignored option
    "properties": {
        "max_turns": {"type": "integer", "minimum": 1, "maximum": 10_000},
        "interrupt_on": {
            "type": "object",
            "propertyNames": {"pattern": TOOL_NAME_PATTERN},
            "additionalProperties": {
                "type": "array",
                "items": {"enum": list(DECISIONS)},
                "minItems": 1,
                "uniqueItems": True,
            },
        },
        "summarization": SUMMARIZATION_SCHEMA,
        "subagents": {
            "type": "array",
            "maxItems": 32,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["name", "description", "system_prompt"],
                "properties": {
                    "name": {"type": "string", "pattern": TOOL_NAME_PATTERN},
                    "description": {"type": "string", "minLength": 1, "maxLength": 1024},
                    "system_prompt": {"type": "string"},
                    "tools": TOOL_LIST_SCHEMA,
                },
            },
        },
        "memory": {
            "type": "object",
            "additionalProperties": False,
            "properties": {"writable": {"type": "boolean"}},
        },
        # Ids of skills of the agent's tenant (the server checks they are the tenant's).
        "skills": {
            "type": "array",
            "items": {"type": "string", "format": "uuid"},
            "uniqueItems": True,
            "maxItems": 256,
        },
    },
}



def _json_integer(checker: TypeChecker, instance: object) -> bool:
    # JSON Schema counts 5.0 as an integer; a config's integers are JSON integers (5, never 5.0
    # or true), as the API's other integer fields are.
    return isinstance(instance, int) and not isinstance(instance, bool)


# Draft 2020-12 with that integer: every validator of a config or tool list is built from it.
JsonValidator = validators.create(
    meta_schema=Draft202012Validator.META_SCHEMA,
    validators=Draft202012Validator.VALIDATORS,
    type_checker=Draft202012Validator.TYPE_CHECKER.redefine("integer", _json_integer),
    format_checker=Draft202012Validator.FORMAT_CHECKER,
)

# The API checks formats too (skill ids are UUIDs); the harness needs only the shape.
_shape = JsonValidator(CONFIG_SCHEMA)
_strict = JsonValidator(CONFIG_SCHEMA, format_checker=Draft202012Validator.FORMAT_CHECKER)


@dataclass(frozen=True, kw_only=True)
class SummarizationOptions:
    """``config.summarization``: when and how SummarizationMiddleware compacts a request."""

    enabled: bool = True
    trigger_tokens: int | None = None  # an absolute budget, else trigger_fraction of the window
    trigger_fraction: float = 0.8
    keep_messages: int = 6
    summary_max_tokens: int = 1024


@dataclass(frozen=True, kw_only=True)
class SubagentSpec:
    """One of ``config.subagents``: a named helper the ``task`` tool hands work to."""

    name: str
    description: str
    system_prompt: str
    tools: tuple[str, ...] | None = None  # None: every tool the parent may use


@dataclass(frozen=True, kw_only=True)
class AgentConfig:
    """The agent's validated ``config`` document."""

    max_turns: int | None = None  # None: the server's default
    # tool name -> the decisions a human may take on a call to it
    interrupt_on: Mapping[str, tuple[Decision, ...]] = field(
        default_factory=lambda: MappingProxyType({}))
    summarization: SummarizationOptions = field(default_factory=SummarizationOptions)
    subagents: tuple[SubagentSpec, ...] = ()
    memory_writable: bool = False  # config.memory.writable
    skills: tuple[str, ...] = ()  # skill ids

    @classmethod
    def from_json(cls, data: Any) -> AgentConfig:
        """Parse a config document; :class:`ConfigurationError` says what is wrong."""
        if problems := config_problems(data, formats=False):
            raise ConfigurationError("agent config is malformed: " + "; ".join(problems))
        return cls(
            max_turns=data.get("max_turns"),
            interrupt_on=MappingProxyType({tool: tuple(decisions)
                                           for tool, decisions in
                                           data.get("interrupt_on", {}).items()}),
            summarization=SummarizationOptions(**data.get("summarization", {})),
            subagents=tuple(SubagentSpec(name=s["name"], description=s["description"],
                                         system_prompt=s["system_prompt"],
                                         tools=None if s.get("tools") is None
                                         else tuple(s["tools"]))
                            for s in data.get("subagents", ())),
            memory_writable=bool(data.get("memory", {}).get("writable", False)),
            skills=tuple(data.get("skills", ())),
        )


def schema_problems(validator: Validator, value: Any) -> list[str]:
    """Every way ``value`` fails ``validator``, as ``path: message`` lines in path order."""
    return [f"{'/'.join(str(p) for p in e.absolute_path) or '(root)'}: {e.message}"
            for e in sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))]


def config_problems(data: Any, *, formats: bool = True) -> list[str]:
    """Readable reasons ``data`` is not a valid agent config; empty when it is. ``formats``
    also checks string formats (the skill ids' UUIDs), as the API does."""
    problems = schema_problems(_strict if formats else _shape, data)
    if problems:  # only a schema-valid document has the shape the checks below rely on
        return problems
    names = [s["name"] for s in data.get("subagents", [])]
    if len(names) != len(set(names)):
        problems.append("subagents: names must be unique")
    return problems


@dataclass(frozen=True, kw_only=True)
class AgentSpec:
    id: str
    name: str
    model: str  # "<provider>:<model>"
    system_prompt: str = ""
    allowed_tools: tuple[str, ...] | None = None  # None = every tool
    config: AgentConfig = field(default_factory=AgentConfig)
    max_tokens: int = DEFAULT_MAX_TOKENS
    default_max_turns: int = DEFAULT_MAX_TURNS  # when config has no max_turns

    @property
    def max_turns(self) -> int:
        return self.config.max_turns or self.default_max_turns

    def allows(self, tool: str) -> bool:
        """Whether the agent's allowlist admits ``tool`` (every tool when it is None)."""
        return self.allowed_tools is None or tool in self.allowed_tools
