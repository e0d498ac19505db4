"""The agent ``config`` document: middleware options, validated with one JSON schema.

Unknown keys are refused so a typo (``max_turn``) is an error, not a silently ignored option.
"""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator

from harness.middleware.summarization import OPTIONS_SCHEMA as SUMMARIZATION_OPTIONS

TOOL_NAME_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
DECISIONS = ["approve", "edit", "reject", "respond"]

_tool_list = {
    "type": "array",
    "items": {"type": "string", "pattern": TOOL_NAME_PATTERN},
    "uniqueItems": True,
    "maxItems": 256,
}

CONFIG_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "max_turns": {"type": "integer", "minimum": 1, "maximum": 10_000},
        "interrupt_on": {
            "type": "object",
            "propertyNames": {"pattern": TOOL_NAME_PATTERN},
            "additionalProperties": {
                "type": "array",
                "items": {"enum": DECISIONS},
                "minItems": 1,
                "uniqueItems": True,
            },
        },
        # The middleware owns its options' schema; the API refuses what it would refuse.
        "summarization": SUMMARIZATION_OPTIONS,
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
                    "tools": _tool_list,
                },
            },
        },
        "memory": {
            "type": "object",
            "additionalProperties": False,
            "properties": {"writable": {"type": "boolean"}},
        },
        # Ids of skills of the agent's tenant (checked against the tenant in agents.services).
        "skills": {
            "type": "array",
            "items": {"type": "string", "format": "uuid"},
            "uniqueItems": True,
            "maxItems": 256,
        },
    },
}

ALLOWED_TOOLS_SCHEMA: dict[str, Any] = {"oneOf": [{"type": "null"}, _tool_list]}

_config_validator = Draft202012Validator(
    CONFIG_SCHEMA, format_checker=Draft202012Validator.FORMAT_CHECKER
)
_tools_validator = Draft202012Validator(ALLOWED_TOOLS_SCHEMA)


def _problems(validator: Draft202012Validator, value: Any) -> list[str]:
    out = []
    for error in sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path)):
        where = "/".join(str(p) for p in error.absolute_path) or "(root)"
        out.append(f"{where}: {error.message}")
    return out


def config_problems(config: Any) -> list[str]:
    """Readable reasons ``config`` is invalid; empty when it is valid."""
    problems = _problems(_config_validator, config)
    if problems:  # only a schema-valid document has the shape the checks below rely on
        return problems
    names = [s["name"] for s in config.get("subagents", [])]
    if len(names) != len(set(names)):
        problems.append("subagents: names must be unique")
    return problems


def allowed_tools_problems(allowed_tools: Any) -> list[str]:
    return _problems(_tools_validator, allowed_tools)
