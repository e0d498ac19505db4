"""Tools: definitions the model sees plus the callables that run them."""

from harness.tools.base import Tool, ToolContext, ToolResult, tool_error
from harness.tools.registry import ToolRegistry, builtin_registry

__all__ = ["Tool", "ToolContext", "ToolResult", "ToolRegistry", "builtin_registry", "tool_error"]
