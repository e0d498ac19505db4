"""agents.config: which tool names an agent's or a skill's fields may use — hango's own, and the
``extra`` names a caller admits (an agent's MCP tools) — and how an unknown one is named."""

from __future__ import annotations

from agents.config import tool_name_problems, tool_problems
from harness.tool_names import builtin_tool_names


def test_hangos_own_tools_are_known():
    assert tool_name_problems(sorted(builtin_tool_names())) == []


def test_each_unknown_name_is_named_once_in_order():
    problems = tool_name_problems(["echo", "docs__search", "read_flie"])
    assert problems == [
        "Unknown tool 'docs__search': the tools are " + ", ".join(sorted(builtin_tool_names()))
        + ".",
        "Unknown tool 'read_flie': did you mean 'read_file'?"]


def test_extra_names_are_admitted_and_offered_as_suggestions():
    extra = frozenset({"docs__search", "docs__fetch"})
    assert tool_name_problems(["docs__search", "echo"], extra=extra) == []
    assert tool_name_problems(["docs__serch"], extra=extra) == [
        "Unknown tool 'docs__serch': did you mean 'docs__search'?"]


def test_every_place_an_agent_names_a_tool_is_checked_by_its_path():
    data = {"allowed_tools": ["x"], "name": "x", "config": {
        "interrupt_on": {"echo": ["approve"], "y": ["approve"]},
        "subagents": [{"name": "x", "description": "d", "system_prompt": "p"},
                      {"name": "z", "description": "d", "system_prompt": "p",
                       "tools": ["ls", "z"]}]}}
    found = tool_problems(data)
    assert [line.split(":")[0] for line in found["allowed_tools"]] == ["0"]
    assert [line.split(":")[0] for line in found["config"]] == [
        "interrupt_on/y", "subagents/1/tools/1"]
    # The extra names (MCP tools) are the agent's own, never a subagent's: its loop has none.
    assert tool_problems(data, extra=frozenset({"x", "y", "z"})) == {"config": [
        "subagents/1/tools/1: Unknown tool 'z': the tools are echo, edit_file, glob, grep, "
        "load_skill, ls, read_file, task, update_memory, word_count, write_file, write_todos."]}


def test_fields_absent_null_or_not_parsed_have_no_tool_problems():
    assert tool_problems({}) == {}
    assert tool_problems({"allowed_tools": None, "config": {}}) == {}
    # A config that does not parse is config_problems' to explain, not this check's.
    assert tool_problems({"config": {"interrupt_on": {"y": ["maybe"]}}}) == {}
    assert tool_problems({"config": "x"}) == {}
