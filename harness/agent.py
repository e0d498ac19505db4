"""The harness's view of an agent: what the loop and the chain need, nothing of Django.

An agent's ``config`` document (middleware options) is one strict, frozen pydantic model,
:class:`AgentConfig`, parsed once, at the edge; nothing deeper reads the raw document. The model
is the one description of the document: the API validates with it — it refuses exactly what a
run would refuse — and publishes its JSON schema (:data:`CONFIG_SCHEMA`; how strict a document
is, and how its schema is published: :mod:`harness.documents`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    ConfigDict,
    Field,
    StringConstraints,
    TypeAdapter,
    ValidationError,
    model_validator,
)
from pydantic_core import PydanticCustomError

from harness.approval_values import Decision
from harness.documents import (
    Document,
    Items,
    NeverNull,
    error_lines,
    problems,
    published_schema,
)
from harness.errors import ConfigurationError
from harness.model_settings import ModelSettings, ModelSettingsOptions, resolve
from harness.tools.base import schema_problem

DEFAULT_MAX_TURNS = 50
DEFAULT_CLIENT_TOOL_TIMEOUT = 600  # seconds
TOOL_NAME_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
# The canonical form only (JSON Schema's "uuid" format): no braces, no "urn:", no bare hex.
UUID_PATTERN = r"^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$"

ToolName = Annotated[str, StringConstraints(pattern=TOOL_NAME_PATTERN)]
ToolList = Annotated[tuple[ToolName, ...], Field(max_length=256), Items(unique=True)]
SkillId = Annotated[str, StringConstraints(pattern=UUID_PATTERN),
                    Field(json_schema_extra={"format": "uuid"})]
Decisions = Annotated[tuple[Decision, ...], Items(unique=True, min_items=1)]
# A tool's name as its MCP server lists it (the protocol allows 1–128 characters).
McpToolName = Annotated[str, StringConstraints(min_length=1, max_length=128)]


class SummarizationOptions(Document):
    """``config.summarization``: when and how SummarizationMiddleware compacts a request."""

    model_config = ConfigDict(
        json_schema_extra={"not": {"required": ["trigger_tokens", "trigger_fraction"]}})

    enabled: bool = True
    trigger_tokens: Annotated[int | None, NeverNull()] = Field(None, ge=1)
    """An absolute budget in tokens; left out, ``trigger_fraction`` of the context window."""
    trigger_fraction: float = Field(0.8, gt=0, le=1)
    keep_messages: int = Field(6, ge=1)
    summary_max_tokens: int = Field(1024, ge=16)

    @model_validator(mode="after")
    def _one_budget(self) -> SummarizationOptions:
        if {"trigger_tokens", "trigger_fraction"} <= self.model_fields_set:
            raise PydanticCustomError("one_budget", "Give trigger_tokens or trigger_fraction, "
                                                    "not both")
        return self


class SubagentSpec(Document):
    """One of ``config.subagents``: a named helper the ``task`` tool hands work to."""

    name: ToolName
    description: str = Field(min_length=1, max_length=1024)
    system_prompt: str
    tools: Annotated[ToolList | None, NeverNull()] = None
    """The tools it may use, within the parent's; left out, every tool the parent may use."""


class MemoryOptions(Document):
    """``config.memory``: the agent's memory files."""

    writable: bool = False
    """Whether the agent may write its memory (``update_memory``), not only read it."""


class McpServerUse(Document):
    """One of ``config.mcp_servers``: an MCP server of the agent's tenant whose tools the
    agent's runs offer (as ``<server name>__<tool name>``)."""

    server: SkillId
    """The server's id (the server checks it is the tenant's)."""
    tools: Annotated[tuple[McpToolName, ...] | None, NeverNull(), Field(max_length=256),
                     Items(unique=True)] = None
    """The server's tools the agent uses, by the server's own names; left out, every tool the
    server's own filter lets through."""


def _valid_schema(schema: dict[str, Any]) -> dict[str, Any]:
    if (problem := schema_problem(schema)) is not None:
        raise PydanticCustomError("invalid_schema", "not a valid JSON Schema: {problem}",
                                  {"problem": problem})
    if schema.get("type") != "object":  # what providers take for a tool's arguments
        raise PydanticCustomError("object_schema", 'a tool\'s arguments are an object: give '
                                  '"type": "object"')
    return schema


class ClientToolSpec(Document):
    """One of ``config.client_tools``: a tool the API's caller runs. The model is offered it
    like any tool; a call to it parks the run (``requires_action``) until the caller sends its
    result (``POST /v1/runs/{id}/tool-results``) or ``client_tool_timeout`` passes."""

    name: ToolName
    description: str = Field(max_length=4096)
    input_schema: Annotated[dict[str, Any], AfterValidator(_valid_schema)]
    """A JSON Schema (draft 2020-12) object the call's arguments are checked against."""


def _client_tools_once(tools: tuple[ClientToolSpec, ...]) -> tuple[ClientToolSpec, ...]:
    names = [t.name for t in tools]
    if len(names) != len(set(names)):
        repeated = next(n for i, n in enumerate(names) if n in names[:i])
        raise PydanticCustomError("unique_names", "names must be unique, {name} is repeated",
                                  {"name": repr(repeated)})
    return tools


def _servers_once(uses: tuple[McpServerUse, ...]) -> tuple[McpServerUse, ...]:
    ids = [u.server.lower() for u in uses]
    if len(ids) != len(set(ids)):
        raise PydanticCustomError("unique_servers", "each server may be named once")
    return uses


def _named_once(subagents: tuple[SubagentSpec, ...]) -> tuple[SubagentSpec, ...]:
    names = [s.name for s in subagents]
    if len(names) != len(set(names)):
        raise PydanticCustomError("unique_names", "names must be unique")
    return subagents


class AgentConfig(Document):
    """The agent's validated ``config`` document."""

    max_turns: Annotated[int | None, NeverNull()] = Field(None, ge=1, le=10_000)
    """Turns a run may take; left out, the server's default."""
    interrupt_on: Annotated[Mapping[ToolName, Decisions], AfterValidator(MappingProxyType)] = Field(
        default_factory=lambda: MappingProxyType({}))
    """Tool name -> the decisions a human may take on a call to it before it runs."""
    summarization: SummarizationOptions = Field(default_factory=SummarizationOptions)
    subagents: Annotated[tuple[SubagentSpec, ...], Field(max_length=32),
                         AfterValidator(_named_once)] = ()
    memory: MemoryOptions = Field(default_factory=MemoryOptions)
    skills: Annotated[tuple[SkillId, ...], Field(max_length=256), Items(unique=True)] = ()
    """Ids of skills of the agent's tenant (the server checks they are the tenant's)."""
    mcp_servers: Annotated[tuple[McpServerUse, ...], Field(max_length=32),
                           AfterValidator(_servers_once)] = ()
    """The MCP servers whose tools the agent's runs offer."""
    client_tools: Annotated[tuple[ClientToolSpec, ...], Field(max_length=128),
                            AfterValidator(_client_tools_once)] = ()
    """Tools the API's caller runs: a call parks the run until the caller sends its result."""
    client_tool_timeout: int = Field(DEFAULT_CLIENT_TOOL_TIMEOUT, ge=0, le=31_536_000)
    """Seconds a client tool's call waits for its result before it is answered as failed
    (``no result from the caller``) and the run goes on; 0: it waits for ever."""
    model_settings: ModelSettingsOptions = Field(default_factory=ModelSettingsOptions)
    """What the agent's model calls ask for: output length, context window, sampling, tool
    choice (:mod:`harness.model_settings`)."""

    @classmethod
    def from_json(cls, document: str | bytes) -> AgentConfig:
        """Parse a config document (JSON text); :class:`ConfigurationError` says what is wrong."""
        try:
            return cls.model_validate_json(document)
        except ValidationError as exc:
            raise ConfigurationError(
                "agent config is malformed: " + "; ".join(error_lines(exc))) from None


_CONFIG: TypeAdapter[AgentConfig] = TypeAdapter(AgentConfig)
# What the API publishes for an agent's config and for a list of tool names.
CONFIG_SCHEMA: dict[str, Any] = published_schema(_CONFIG)
TOOL_LIST_SCHEMA: dict[str, Any] = published_schema(TypeAdapter(ToolList))


def config_problems(data: Any) -> list[str]:
    """Readable reasons ``data`` (a JSON value) is not a valid agent config; empty when it
    is."""
    return problems(_CONFIG, data)


@dataclass(frozen=True, kw_only=True)
class AgentSpec:
    id: str
    name: str
    model: str  # "<provider>:<model>"
    system_prompt: str = ""
    allowed_tools: tuple[str, ...] | None = None  # None = every tool
    config: AgentConfig = field(default_factory=AgentConfig)
    default_max_turns: int = DEFAULT_MAX_TURNS  # when config has no max_turns
    # The context length the model's server reports (None: not asked, or it reports none):
    # used for a model the table does not know, when the agent sets no window.
    server_window: int | None = None

    @cached_property
    def settings(self) -> ModelSettings:
        """The effective settings of the agent's model calls (resolved once per spec)."""
        return resolve(self.model, self.config.model_settings, server_window=self.server_window)

    @property
    def max_tokens(self) -> int:
        return self.settings.max_output_tokens

    @property
    def max_turns(self) -> int:
        return self.config.max_turns or self.default_max_turns

    def allows(self, tool: str) -> bool:
        """Whether the agent's allowlist admits ``tool`` (every tool when it is None)."""
        return self.allowed_tools is None or tool in self.allowed_tools
