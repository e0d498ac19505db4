"""Run state: the working history, the todo list and each middleware's private state.

``State.private`` is keyed by middleware name. Middlewares never touch it directly: they use
:func:`load_private` / :func:`store_private` with their own typed class, so a resumed run rebuilds
typed objects instead of handing a plain dict to code that expects a dataclass. Typed values are
kept live in memory and turned into JSON only when the state is checkpointed.

``State.scratch`` is per-batch: the loop clears it at the end of every tool-call batch.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar, get_args

from harness import telemetry
from harness.approval_values import PendingBatch
from harness.errors import InvalidContent
from harness.ledger import Ledger
from harness.messages import Message, ModelUsage
from harness.serde import batch_from_json, batch_to_json

TodoStatus = Literal["pending", "in_progress", "completed"]
TODO_STATUSES: tuple[str, ...] = get_args(TodoStatus)
STATE_VERSION = 1

T = TypeVar("T")


@dataclass(frozen=True, kw_only=True)
class Todo:
    content: str
    status: TodoStatus


@dataclass(kw_only=True, eq=False)
class State:
    run_id: str = ""
    session_id: str = ""
    agent_id: str = ""
    tenant_id: str = ""
    messages: list[Message] = field(default_factory=list)
    todos: list[Todo] = field(default_factory=list)
    # name -> JSON as loaded, or the live typed object once a middleware has read or stored it.
    private: dict[str, Any] = field(default_factory=dict)
    scratch: dict[str, Any] = field(default_factory=dict)
    # Turns committed so far (restored from the run on resume).
    turn: int = 0
    # Whether message content may be put on telemetry (the tenant's trace_llm_content).
    trace_content: bool = False
    # Run events produced since the loop last collected them: (type, data).
    outbox: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    # Model calls made since the loop last collected them (the run's own, summaries, subagents).
    usage: list[ModelUsage] = field(default_factory=list)
    # A tool batch waiting for human decisions (:mod:`harness.approvals`), persisted. A typed
    # top-level field, not private state: the API reads it and writes decisions into it.
    pending_batch: PendingBatch | None = None
    # Where each model call is recorded as it ends (the server's: its usage row), or None.
    # Not state of the run: never checkpointed, given again by whoever builds the state.
    ledger: Ledger | None = None

    def clear_scratch(self) -> None:
        self.scratch.clear()

    def emit(self, event_type: str, data: dict[str, Any]) -> None:
        """Queue a run event (``todos.updated``, ``tool.result``…) for the next checkpoint."""
        self.outbox.append((event_type, data))

    def take_events(self) -> list[tuple[str, dict[str, Any]]]:
        events, self.outbox = self.outbox, []
        return events

    def record_usage(self, usage: ModelUsage) -> None:
        """A model call ended: kept for the turn's result and told to the ledger at once, as
        a call of the turn under way (:mod:`harness.ledger`)."""
        self.usage.append(usage)
        if self.ledger is not None:
            self.ledger.record(usage, turn=self.turn + 1)

    def take_usage(self) -> list[ModelUsage]:
        usage, self.usage = self.usage, []
        return usage


def _private_to_json(value: Any) -> Any:
    if hasattr(value, "to_json"):
        return value.to_json()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value


def _private_from_json(cls: type[T], data: Any) -> T:
    if hasattr(cls, "from_json"):
        return cls.from_json(data)  # type: ignore[attr-defined,no-any-return]
    if not isinstance(data, dict):
        raise InvalidContent(f"private state for {cls.__name__} is not an object")
    return cls(**data)


def load_private(state: State, name: str, cls: type[T]) -> tuple[T, bool]:
    """The middleware ``name``'s typed state and whether it was there.

    A missing key is an explicit case: the class's default is returned with ``found=False``, and
    on a resumed run (one that has committed turns) a ``middleware.state_missing`` span event is
    recorded — never a silent zero value. A new run has no private state yet; that is expected.
    """
    if name in state.private:
        value = state.private[name]
        if not isinstance(value, cls):
            value = _private_from_json(cls, value)
            state.private[name] = value
        return value, True
    if state.turn > 0:
        telemetry.record_event(telemetry.EVENT_STATE_MISSING,
                               {telemetry.ATTR_MIDDLEWARE_NAME: name})
    value = cls()
    state.private[name] = value
    return value, False


def store_private(state: State, name: str, value: Any) -> None:
    state.private[name] = value


def todo_from_json(data: Any) -> Todo:
    if (
        not isinstance(data, dict)
        or not isinstance(data.get("content"), str)
        or data.get("status") not in TODO_STATUSES
    ):
        raise InvalidContent("a todo needs a string 'content' and a valid 'status'")
    return Todo(content=data["content"], status=data["status"])


def todo_to_json(todo: Todo) -> dict[str, str]:
    return {"content": todo.content, "status": todo.status}


def state_to_json(state: State) -> dict[str, Any]:
    """What ``runs.state_json`` holds. Messages are stored as rows, not here."""
    out: dict[str, Any] = {
        "version": STATE_VERSION,
        "todos": [todo_to_json(t) for t in state.todos],
        "private": {name: _private_to_json(v) for name, v in state.private.items()},
    }
    if state.pending_batch is not None:
        out["pending_batch"] = batch_to_json(state.pending_batch)
    return out


def state_from_json(data: Any, **fields: Any) -> State:
    """A State from a checkpoint (``{}`` for a new run) plus ids and messages given as fields."""
    if not isinstance(data, dict):
        raise InvalidContent("state_json must be an object")
    private = data.get("private", {})
    if not isinstance(private, dict):
        raise InvalidContent("state_json 'private' must be an object")
    batch = data.get("pending_batch")
    return State(
        todos=[todo_from_json(t) for t in data.get("todos", [])],
        private=dict(private),
        pending_batch=None if batch is None else batch_from_json(batch),
        **fields,
    )
