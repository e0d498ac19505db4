"""The agent ``config`` document and ``allowed_tools`` list, as the API validates them.

Both are the harness's types (:class:`harness.agent.AgentConfig`, :data:`harness.agent.ToolList`):
the API refuses exactly what a run would refuse, and the worker parses the stored document into
a frozen :class:`~harness.agent.AgentConfig` once per distinct document.
"""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter

from harness.agent import ToolList, config_problems
from harness.documents import problems

__all__ = ["allowed_tools_problems", "config_problems"]

_ALLOWED_TOOLS: TypeAdapter[ToolList | None] = TypeAdapter(ToolList | None)


def allowed_tools_problems(allowed_tools: Any) -> list[str]:
    """Readable reasons ``allowed_tools`` is neither null nor a list of tool names."""
    return problems(_ALLOWED_TOOLS, allowed_tools)
