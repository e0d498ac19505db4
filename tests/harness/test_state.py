"""harness.state: typed private state survives state_json; missing keys are explicit; todos too."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest

from harness import telemetry
from harness.errors import InvalidContent
from harness.messages import Message
from harness.middleware.repeat_call import RepeatCounts
from harness.state import (
    STATE_VERSION,
    State,
    Todo,
    load_private,
    state_from_json,
    state_to_json,
    store_private,
    todo_from_json,
)
from tests.support.harness import events_named


@dataclass(kw_only=True)
class Offloaded:
    """A plain dataclass: stored with dataclasses.asdict, rebuilt with cls(**data)."""

    paths: list[str] = field(default_factory=list)
    bytes_saved: int = 0


@dataclass(kw_only=True)
class Ledger:
    """A class with its own JSON shape (a list, not an object)."""

    entries: tuple[tuple[str, int], ...] = ()

    def to_json(self) -> Any:
        return [[k, v] for k, v in self.entries]

    @classmethod
    def from_json(cls, data: Any) -> Ledger:
        return cls(entries=tuple((k, v) for k, v in data))


def reload(state: State, **fields: Any) -> State:
    """What a checkpoint and resume do: state_json through a real JSON document and back."""
    return state_from_json(json.loads(json.dumps(state_to_json(state))), **fields)


def test_three_typed_private_states_survive_the_round_trip():
    state = State()
    store_private(state, "repeat_call", RepeatCounts(counts={"00ab": 2, "ff01": 1}))
    store_private(state, "filesystem", Offloaded(paths=["/a", "/b"], bytes_saved=42))
    store_private(state, "ledger", Ledger(entries=(("x", 1), ("y", 2))))

    resumed = reload(state)

    expected = [
        ("repeat_call", RepeatCounts, RepeatCounts(counts={"00ab": 2, "ff01": 1})),
        ("filesystem", Offloaded, Offloaded(paths=["/a", "/b"], bytes_saved=42)),
        ("ledger", Ledger, Ledger(entries=(("x", 1), ("y", 2)))),
    ]
    for name, cls, value in expected:
        loaded, found = load_private(resumed, name, cls)
        assert found is True
        assert type(loaded) is cls
        assert loaded == value
        # The typed object is now what the state holds; a second read returns the same one.
        assert load_private(resumed, name, cls)[0] is loaded


def test_the_custom_json_shape_is_what_state_json_holds():
    state = State()
    store_private(state, "ledger", Ledger(entries=(("x", 1),)))
    store_private(state, "repeat_call", RepeatCounts(counts={"k": 1}))
    data = state_to_json(state)
    assert data["private"] == {"ledger": [["x", 1]], "repeat_call": {"counts": {"k": 1}}}
    assert data["version"] == STATE_VERSION


def test_missing_key_on_a_new_run_is_expected_and_not_reported(spans):
    with telemetry.span("test.new"):
        assert load_private(State(), "filesystem", Offloaded) == (Offloaded(), False)
    assert events_named(spans, telemetry.EVENT_STATE_MISSING) == []


def test_missing_key_returns_default_and_records_state_missing(spans):
    state = State(turn=3)  # a resumed run
    with telemetry.span("test.resume"):
        value, found = load_private(state, "filesystem", Offloaded)
    assert (value, found) == (Offloaded(), False)
    # The default is initialised in the state, so the next read finds it.
    assert load_private(state, "filesystem", Offloaded) == (value, True)
    events = events_named(spans, telemetry.EVENT_STATE_MISSING)
    assert len(events) == 1
    assert events[0].attributes[telemetry.ATTR_MIDDLEWARE_NAME] == "filesystem"


def test_missing_key_after_a_real_round_trip(spans):
    state = State()
    store_private(state, "repeat_call", RepeatCounts(counts={"k": 1}))
    resumed = reload(state)
    resumed.turn = 4
    with telemetry.span("test.resume"):
        ledger, found = load_private(resumed, "ledger", Ledger)
        counts, counts_found = load_private(resumed, "repeat_call", RepeatCounts)
    assert (ledger, found) == (Ledger(), False)
    assert (counts, counts_found) == (RepeatCounts(counts={"k": 1}), True)
    names = [e.attributes[telemetry.ATTR_MIDDLEWARE_NAME]
             for e in events_named(spans, telemetry.EVENT_STATE_MISSING)]
    assert names == ["ledger"]


def test_private_state_that_is_not_an_object_is_rejected():
    state = state_from_json({"private": {"filesystem": ["not", "an", "object"]}})
    with pytest.raises(InvalidContent):
        load_private(state, "filesystem", Offloaded)


def test_todos_survive_the_round_trip_and_fields_are_given():
    todos = [Todo(content="plan", status="completed"), Todo(content="build", status="in_progress"),
             Todo(content="ship", status="pending")]
    messages = [Message.user("hi")]
    resumed = reload(State(todos=todos), run_id="r1", session_id="s1", messages=messages)
    assert resumed.todos == todos
    assert (resumed.run_id, resumed.session_id, resumed.messages) == ("r1", "s1", messages)


def test_state_json_for_a_new_run_is_empty():
    state = state_from_json({})
    assert (state.todos, state.private, state.scratch) == ([], {}, {})
    assert state_to_json(state) == {"version": STATE_VERSION, "todos": [], "private": {}}


def test_scratch_and_outbox_are_not_persisted():
    state = State(scratch={"modified": ["/a"]})
    state.emit("todos.updated", {"todos": []})
    assert set(state_to_json(state)) == {"version", "todos", "private"}
    assert reload(state).scratch == {}


@pytest.mark.parametrize("data", [
    [],
    "{}",
    {"private": []},
    {"todos": [{"content": "x", "status": "done"}]},
    {"todos": [{"content": 3, "status": "pending"}]},
    {"todos": ["x"]},
])
def test_invalid_state_json_raises(data):
    with pytest.raises(InvalidContent):
        state_from_json(data)


def test_todo_from_json_accepts_every_status():
    for status in ("pending", "in_progress", "completed"):
        todo = todo_from_json({"content": "c", "status": status})
        assert todo == Todo(content="c", status=status)


def test_emit_and_take_events():
    state = State()
    state.emit("a", {"x": 1})
    state.emit("b", {})
    assert state.take_events() == [("a", {"x": 1}), ("b", {})]
    assert state.take_events() == []
