"""The agent ``config`` document and ``allowed_tools`` list, as the API validates them.

The config's schema is the harness's (:data:`harness.agent.CONFIG_SCHEMA`): the API refuses
exactly what a run would refuse, and the worker parses the stored document into a frozen
:class:`harness.agent.AgentConfig` once per run.
"""

from __future__ import annotations

from typing import Any

from harness.agent import TOOL_LIST_SCHEMA, JsonValidator, config_problems, schema_problems

__all__ = ["allowed_tools_problems", "config_problems"]

# A type list rather than a oneOf: a wrong value's error then names the types ("5 is not of
# type 'array', 'null'").
ALLOWED_TOOLS_SCHEMA: dict[str, Any] = {**TOOL_LIST_SCHEMA, "type": ["array", "null"]}

_tools_validator = JsonValidator(ALLOWED_TOOLS_SCHEMA)


def allowed_tools_problems(allowed_tools: Any) -> list[str]:
    """Readable reasons ``allowed_tools`` is neither null nor a list of tool names."""
    return schema_problems(_tools_validator, allowed_tools)
