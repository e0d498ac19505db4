"""The names of every tool a run can offer of its own: the built-in registry's and each
tool-providing middleware's.

An agent names tools in ``allowed_tools``, ``config.interrupt_on`` and its subagents' ``tools``,
a skill in its ``allowed_tools``; a name no run can offer is a mistake the API refuses
(:mod:`agents.config`), since the run would silently go without it. The set is read from the
code that offers the tools — the registry, and the names each middleware module gives its
tools — so it cannot drift from it; ``tests/harness/test_tool_names.py`` builds a stack with
every feature on and checks the chain offers exactly these. Tools that come from outside (MCP
servers) are named by the agent's config, not here: the caller adds them.
"""

from __future__ import annotations

from functools import cache

from harness.middleware import memory, skills, subagent, todo
from harness.tools import files
from harness.tools.registry import builtin_registry


@cache
def builtin_tool_names() -> frozenset[str]:
    """Every name a run's own tools answer to (registry tools, file tools, ``write_todos``,
    ``task``, ``load_skill``, ``update_memory``)."""
    return frozenset((*builtin_registry().names(), *files.TOOL_NAMES, todo.TOOL_NAME,
                      subagent.TOOL_NAME, skills.TOOL_NAME, memory.TOOL_NAME))
