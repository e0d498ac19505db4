"""TodoMiddleware: the ``write_todos`` planning tool.

``write_todos`` replaces the whole list on ``State.todos`` (persisted with the run, so a resumed
run keeps its plan); the current list is rendered into the system prompt on every model call as
the ``system:todo`` part; the list never enters ``State.messages`` beyond the tool call itself.
Its slot sits after RepairToolCalls so a repaired history is what the plan is read against.
"""

from __future__ import annotations

from collections import Counter
from functools import cache
from typing import Any

from harness import telemetry
from harness.context import SourcedBlock
from harness.messages import TextBlock
from harness.state import TODO_STATUSES, State, Todo
from harness.tools.base import Tool, ToolContext, ToolResult, tool_error

NAME = "todo"
TOOL_NAME = "write_todos"
PART = "system:todo"
EVENT_UPDATED = "todos.updated"  # the run event each write emits, with the whole list

DESCRIPTION = """Write the plan for the current task as a todo list. Each call REPLACES the whole \
list, so always send every item with its current status.

Use it for work with three or more distinct steps, or when the user gives several tasks. Skip it \
for a single simple step or a plain question: answer directly instead.

Rules: keep exactly one item "in_progress" while you work; mark an item "completed" as soon as it \
is done, not in batches; add items you discover, remove ones that no longer apply. Marking items \
complete is not an answer: when every item is done, reply to the user with the result."""

SCHEMA = {
    "type": "object",
    "properties": {
        "todos": {
            "type": "array",
            "maxItems": 100,
            "items": {
                "type": "object",
                "properties": {
                    "content": {"type": "string", "minLength": 1, "maxLength": 2000},
                    "status": {"enum": list(TODO_STATUSES)},
                },
                "required": ["content", "status"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["todos"],
    "additionalProperties": False,
}

_MARKS = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]"}


def render(todos: list[Todo]) -> str:
    if not todos:
        return "Your todo list is empty. Use write_todos to plan multi-step work."
    lines = ["Your current todo list (update it with write_todos):"]
    lines += [f"{i}. {_MARKS[t.status]} {t.content} ({t.status})" for i, t in enumerate(todos, 1)]
    return "\n".join(lines)


def todo_counts(todos: list[Todo]) -> dict[str, int]:
    counts: Counter[str] = Counter(t.status for t in todos)
    return {status: counts[status] for status in TODO_STATUSES}


class TodoMiddleware:
    name = NAME

    def __init__(self) -> None:
        self._tool = _write_todos_tool()

    def provide_tools(self, state: State) -> list[Tool]:
        return [self._tool]

    def system_blocks(self, state: State) -> list[SourcedBlock]:
        return [SourcedBlock(part=PART, block=TextBlock(text=render(state.todos)))]

    @staticmethod
    def _write_todos(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        todos = [Todo(content=t["content"], status=t["status"]) for t in args["todos"]]
        in_progress = sum(t.status == "in_progress" for t in todos)
        if in_progress > 1:
            return tool_error(
                f"{in_progress} items are in_progress; keep exactly one in_progress at a time."
            )
        ctx.state.todos = todos
        counts = todo_counts(todos)
        telemetry.record_event(telemetry.EVENT_TODOS_UPDATED, {
            telemetry.ATTR_TODOS_PENDING: counts["pending"],
            telemetry.ATTR_TODOS_IN_PROGRESS: counts["in_progress"],
            telemetry.ATTR_TODOS_COMPLETED: counts["completed"],
        })
        # Mirrored as span attributes for Langfuse, which reads observation metadata there.
        telemetry.set_attributes({
            telemetry.ATTR_LANGFUSE_TODOS_TOTAL: len(todos),
            telemetry.ATTR_LANGFUSE_TODOS_COMPLETED: counts["completed"],
        })
        ctx.state.emit(EVENT_UPDATED, {
            "todos": [{"content": t.content, "status": t.status} for t in todos]
        })
        done = counts["completed"]
        return ToolResult(content=f"Todo list updated: {done}/{len(todos)} completed.")


@cache
def _write_todos_tool() -> Tool:
    """Built once per process: the tool is immutable, and checking its schema takes milliseconds
    (every run builds its stack anew)."""
    return Tool(name=TOOL_NAME, description=DESCRIPTION, input_schema=SCHEMA,
                fn=TodoMiddleware._write_todos)
