"""The registry of tools by name, and an agent's view of it."""

from __future__ import annotations

from collections.abc import Iterable

from harness.errors import ConfigurationError
from harness.tools.base import Tool


class ToolRegistry:
    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            self.register(tool)

    def register(self, tool: Tool) -> None:
        if tool.name in self._tools:
            raise ConfigurationError(f"tool {tool.name!r} is registered twice")
        self._tools[tool.name] = tool

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return list(self._tools)

    def all(self) -> list[Tool]:
        return list(self._tools.values())

    def view(self, allowed_tools: Iterable[str] | None) -> list[Tool]:
        """The tools an agent may use: all of them for ``None``, else those named, in
        registration order."""
        if allowed_tools is None:
            return self.all()
        allowed = set(allowed_tools)
        return [t for t in self._tools.values() if t.name in allowed]


def builtin_registry() -> ToolRegistry:
    """The built-in tools every agent may be given (middleware-provided tools come on top)."""
    from harness.tools import utility

    return ToolRegistry(utility.TOOLS)
