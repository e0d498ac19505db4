"""TodoMiddleware: write_todos replaces the list, renders it into the next prompt, never into
the history, validates statuses, and reports counts (never content) on telemetry."""

from __future__ import annotations

from harness import telemetry
from harness.middleware.todo import DESCRIPTION, PART, TOOL_NAME, TodoMiddleware, render
from harness.providers.scripted import ScriptedModel, text, tool_call
from harness.state import State, Todo
from tests.support.harness import all_texts, events_named, make_loop, run

FIRST = [
    {"content": "gather the figures", "status": "completed"},
    {"content": "draft the summary", "status": "in_progress"},
    {"content": "review the draft", "status": "pending"},
]
SECOND = [{"content": "send the report", "status": "in_progress"}]
RENDERED_MARKER = "Your current todo list"


def todos(items) -> list[Todo]:
    return [Todo(content=i["content"], status=i["status"]) for i in items]


def write(items, call_id):
    return tool_call(TOOL_NAME, {"todos": items}, call_id=call_id)


def run_steps(*steps, state: State | None = None):
    model = ScriptedModel([*steps, text("done")])
    step, state, recorder = run(make_loop(model), state)
    return model, state, recorder


def todo_block(request) -> str:
    (block,) = [b for b in request.system if "todo list" in b.text]
    return block.text


def test_write_todos_replaces_the_whole_list():
    model, state, _ = run_steps(write(FIRST, "w1"), write(SECOND, "w2"))
    assert state.todos == todos(SECOND)
    results = [m.tool_results[0].content for m in state.messages if m.tool_results]
    assert results == ["Todo list updated: 1/3 completed.", "Todo list updated: 0/1 completed."]


def test_the_list_is_in_the_system_prompt_of_the_next_model_call():
    model, _, _ = run_steps(write(FIRST, "w1"), write(SECOND, "w2"))
    assert todo_block(model.calls[0]) == render([])
    assert todo_block(model.calls[1]) == render(todos(FIRST))
    assert todo_block(model.calls[2]) == render(todos(SECOND))
    assert render(todos(FIRST)) == (
        "Your current todo list (update it with write_todos):\n"
        "1. [x] gather the figures (completed)\n"
        "2. [~] draft the summary (in_progress)\n"
        "3. [ ] review the draft (pending)"
    )
    # It is the last system block, after the agent's own, where the chain puts it.
    assert model.calls[1].system[-1].text == render(todos(FIRST))


def test_todos_never_enter_the_history():
    model, state, _ = run_steps(write(FIRST, "w1"), write(SECOND, "w2"))
    for messages in [state.messages, *(call.messages for call in model.calls)]:
        assert not any(RENDERED_MARKER in t for t in all_texts(messages))
    # The only trace in the history is the tool call and its result.
    uses = [b for m in state.messages for b in m.tool_uses]
    assert [u.id for u in uses] == ["w1", "w2"]
    assert len(state.messages) == 6  # user, (call, result) x 2, answer


def test_two_in_progress_items_are_refused_and_the_list_is_unchanged():
    two = [{"content": "a", "status": "in_progress"}, {"content": "b", "status": "in_progress"}]
    model, state, _ = run_steps(write(FIRST, "w1"), write(two, "w2"))
    result = state.messages[4].tool_results[0]
    assert result.is_error
    assert "2 items are in_progress" in result.content
    assert state.todos == todos(FIRST)


def test_an_invalid_status_is_a_schema_error_and_the_list_is_unchanged():
    bad = [{"content": "a", "status": "done"}]
    model, state, _ = run_steps(write(FIRST, "w1"), write(bad, "w2"))
    result = state.messages[4].tool_results[0]
    assert result.is_error
    assert result.content.startswith("Invalid arguments for write_todos:")
    assert "todos/0/status" in result.content and "'done'" in result.content
    assert state.todos == todos(FIRST)


def test_an_empty_list_clears_the_plan():
    _, state, _ = run_steps(write(FIRST, "w1"), write([], "w2"))
    assert state.todos == []


def test_todos_updated_event_reaches_the_turn_result():
    _, state, recorder = run_steps(write(FIRST, "w1"))
    first_turn = recorder.results[0]
    assert ("todos.updated", {"todos": FIRST}) in first_turn.events
    assert state.outbox == []  # collected by the loop, not left behind
    assert all(e[0] != "todos.updated" for e in recorder.results[1].events)


def test_span_event_carries_counts_per_status_never_the_content(spans):
    run_steps(write(FIRST, "w1"))
    (event,) = events_named(spans, telemetry.EVENT_TODOS_UPDATED)
    assert dict(event.attributes) == {
        telemetry.ATTR_TODOS_PENDING: 1,
        telemetry.ATTR_TODOS_IN_PROGRESS: 1,
        telemetry.ATTR_TODOS_COMPLETED: 1,
    }
    [tool_span] = [s for s in spans.get_finished_spans() if s.name == telemetry.SPAN_EXECUTE_TOOL]
    assert tool_span.attributes[telemetry.ATTR_LANGFUSE_TODOS_TOTAL] == 3
    assert tool_span.attributes[telemetry.ATTR_LANGFUSE_TODOS_COMPLETED] == 1
    for s in spans.get_finished_spans():
        values = [*s.attributes.values(), *(v for e in s.events for v in e.attributes.values())]
        assert not any("gather the figures" in str(v) for v in values), s.name


def test_the_tool_and_prompt_part():
    middleware = TodoMiddleware()
    (tool,) = middleware.provide_tools(State())
    assert tool.name == TOOL_NAME
    assert "REPLACES the whole" in tool.description and "exactly one" in DESCRIPTION
    (block,) = middleware.system_blocks(State(todos=todos(SECOND)))
    assert block.part == PART
    assert block.block.text == render(todos(SECOND))
