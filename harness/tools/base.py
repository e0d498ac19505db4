"""A tool: name, description, JSON-schema input and a call returning a result.

Arguments are validated against the schema before the call; a bad call becomes an error result
the model can read (never an exception out of the loop).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from referencing import Registry, Resource
from referencing.exceptions import NoSuchResource, Unresolvable

from harness.approval_values import AwaitingApproval
from harness.errors import ConfigurationError, RunCannotGoOn, Superseded
from harness.messages import ImageBlock, ToolDef, ToolUseBlock

if TYPE_CHECKING:
    from harness.state import State

log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class ToolResult:
    content: str
    is_error: bool = False
    # Images beside the text (an MCP tool's screenshot): checked and kept or replaced by a line
    # of text when the result is stored (harness.images.admit).
    images: tuple[ImageBlock, ...] = ()


def tool_error(message: str) -> ToolResult:
    return ToolResult(content=message, is_error=True)


def never() -> bool:
    """A ``cancel_requested`` that never is."""
    return False


@dataclass(frozen=True, kw_only=True)
class ToolContext:
    """What a running tool may look at: the run state, the call being answered, and whether the
    run has been asked to stop (a long tool, such as a subagent, checks it)."""

    state: State
    call: ToolUseBlock
    cancel_requested: Callable[[], bool] = never


# A tool answers its result, or that the call waits (a client tool's: the API's caller runs it).
ToolFn = Callable[[dict[str, Any], ToolContext], ToolResult | str | AwaitingApproval]


VALID_SCHEMAS_KEPT = 4096
_valid_schemas: dict[str, None] = {}  # insertion-ordered: the oldest goes first


def schema_problem(schema: Any) -> str | None:
    """Why ``schema`` is not a valid JSON Schema (draft 2020-12) a tool's input can have; None
    when it is. The one check of a tool schema, for every tool (:func:`_check_schema`) and for
    the agent config's client tools before any run builds them."""
    if not isinstance(schema, dict):
        return "a tool's input_schema must be a JSON object"
    try:
        _check_schema("", schema)
    except ConfigurationError as exc:
        return str(exc).split(": ", 1)[-1]
    return None


def _check_schema(tool: str, schema: dict[str, Any]) -> None:
    """Refuse an invalid JSON schema. Checking one takes milliseconds and every run builds its
    tools anew, so each distinct schema is checked once per process. The schemas of MCP tools
    come from tenants' servers, so the memo is bounded (:data:`VALID_SCHEMAS_KEPT`)."""
    key = json.dumps(schema, sort_keys=True, default=str)
    if key in _valid_schemas:
        return
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        raise ConfigurationError(f"tool {tool!r} has an invalid schema: {exc.message}") from exc
    except RecursionError:  # an MCP server's schema nested past what the checker can walk
        raise ConfigurationError(f"tool {tool!r} has an invalid schema: nested too deeply") \
            from None
    if len(_valid_schemas) >= VALID_SCHEMAS_KEPT:
        del _valid_schemas[next(iter(_valid_schemas))]
    _valid_schemas[key] = None


def _never_retrieve(uri: str) -> Resource[Any]:
    """A ``$ref`` outside the schema is never fetched: an MCP server's schema would otherwise
    make the worker request any address it names, past the outbound rule."""
    raise NoSuchResource(ref=uri)  # type: ignore[call-arg]  # an attrs class


_LOCAL_ONLY: Registry[Any] = Registry(retrieve=_never_retrieve)  # type: ignore[call-arg]


@dataclass(frozen=True, kw_only=True, eq=False)
class Tool:
    name: str
    description: str
    input_schema: dict[str, Any]
    fn: ToolFn = field(repr=False)

    def __post_init__(self) -> None:
        _check_schema(self.name, self.input_schema)

    @cached_property
    def definition(self) -> ToolDef:
        return ToolDef(name=self.name, description=self.description, input_schema=self.input_schema)

    @cached_property
    def _validator(self) -> Draft202012Validator:
        return Draft202012Validator(self.input_schema, registry=_LOCAL_ONLY)

    def argument_problems(self, args: Any) -> list[str]:
        if not isinstance(args, dict):
            return ["arguments must be a JSON object"]
        problems = []
        try:
            for error in self._validator.iter_errors(args):
                where = "/".join(str(p) for p in error.absolute_path) or "arguments"
                problems.append(f"{where}: {error.message}")
        except Unresolvable as exc:
            problems.append(f"the tool's schema refers to {exc.ref!r}, which is not in the "
                            "schema (hango fetches no schema from elsewhere)")
        return problems

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult | AwaitingApproval:
        """Validate, then call. Every failure comes back as an error result; a call the tool
        says waits (:class:`AwaitingApproval`) comes back as that."""
        problems = self.argument_problems(args)
        if problems:
            return tool_error(
                f"Invalid arguments for {self.name}: " + "; ".join(problems)
                + ". Fix the arguments and call again."
            )
        try:
            result = self.fn(args, ctx)
        except (Superseded, RunCannotGoOn):  # stop the run; do not tell the model
            raise
        except Exception as exc:  # a tool's bug must not kill the run; the model reads it
            log.warning("tool %s raised", self.name, exc_info=True)
            return tool_error(f"{self.name} failed: {type(exc).__name__}: {exc}")
        if isinstance(result, ToolResult | AwaitingApproval):
            return result
        return ToolResult(content=str(result))
