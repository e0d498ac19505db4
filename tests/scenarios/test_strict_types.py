"""Every JSON body field takes its own type only: walking every body operation of the schema, a
value of another JSON type at any typed place (a field, a list's item, a nested object's field)
answers 422 naming that place, never a write of the coerced value."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest

from agents.models import Agent, MemoryFile, Skill
from context.models import ContextOverride
from runs.models import Message, Session
from tests.support.api import AGENT_BODY, error_of
from tests.support.openapi import Operation, body_operations

# A body each operation accepts (or refuses for reasons other than types: the run is not
# awaiting approval, the message would have no user message before it); one value at a time is
# then made wrong. Ids in braces are filled from ``route_ids``.
VALID: dict[str, Any] = {
    "agents_create": {**AGENT_BODY, "allowed_tools": ["read_file"],
                      "config": {"max_turns": 5, "memory": {"writable": True},
                                 "summarization": {"trigger_fraction": 0.5, "keep_messages": 4},
                                 "interrupt_on": {"write_file": ["approve"]},
                                 "subagents": [{"name": "s", "description": "d",
                                                "system_prompt": "p", "tools": ["ls"]}]}},
    "agents_update": {"name": "renamed", "description": "d", "system_prompt": "p",
                      "model": "scripted:demo"},
    "agents_memory_create": {"path": "/memories/new.md", "content": "x"},
    "agents_memory_update": {"content": "y"},
    "skills_create": {"name": "other", "description": "d", "instructions": "i",
                      "allowed_tools": ["ls"]},
    "skills_update": {"name": "renamed", "description": "e", "instructions": "j"},
    "sessions_create": {"agent": "{agent_id}", "title": "t"},
    "sessions_messages_create": {"content": "hi"},
    "runs_approve": {"decisions": [{"tool_use_id": "t1", "type": "edit", "input": {}},
                                   {"tool_use_id": "t2", "type": "reject", "message": "no"}]},
    "agents_context_overrides_replace": [{"part": "system:agent", "action": "replace",
                                          "replacement": "x"}],
    "sessions_context_overrides_replace": [{"part": "message:1", "action": "replace",
                                            "replacement": "x"}],
    "sessions_context_overrides_both_replace": {
        "agent": [{"part": "system:agent", "action": "replace", "replacement": "x"}],
        "session": [{"part": "message:1", "action": "replace", "replacement": "x"}]},
    "sessions_context_try": {"exclude": ["system:todo"], "replace": {"system:agent": "x"},
                             "message": "m"},
    "sessions_context_preview": {"overrides": [{"part": "system:agent", "action": "replace",
                                                "replacement": "x"}]},
    "webhooks_create": {"url": "https://hooks.example.com/x", "description": "d",
                        "agent": "{agent_id}", "events": ["run.failed"], "active": True},
    "webhooks_update": {"url": "https://hooks.example.com/y", "description": "e",
                        "events": ["run.completed"], "active": False},
    "mcp_servers_create": {"name": "docs", "description": "d", "transport": "streamable_http",
                           "url": "https://docs.example.com/mcp", "headers": {"X-Team": "t"},
                           "timeout_seconds": 20, "tools_allow": ["a"], "tools_deny": ["b"],
                           "required": True, "idempotent": False},
    "mcp_servers_update": {"name": "kb", "description": "e", "transport": "sse",
                           "url": "https://kb.example.com/sse", "headers": {"X-Team": "u"},
                           "timeout_seconds": 15.5, "tools_allow": ["c"], "tools_deny": [],
                           "required": False, "idempotent": True},
    "credentials_update": {"value": "s3cret"},
    "prices_update": {"currency": "EUR", "input": "0.5", "cache_write": "0.625",
                      "cache_read": "0.05", "output": "2"},
    "schedules_create": {"name": "n", "agent": "{agent_id}", "cron": "0 9 * * *",
                         "timezone": "UTC", "content": "hi", "multitask": "enqueue",
                         "pause_after_failures": 2, "active": True},
    "schedules_update": {"name": "m", "cron": "0 10 * * *", "timezone": "UTC",
                         "content": "hello", "multitask": "reject", "pause_after_failures": 1,
                         "active": False},
}

# One value of each JSON type, and those a lax parser would coerce: "5" to 5, 5.0 to 5, 1 to
# True, 5 to "5".
CANDIDATES: list[Any] = [5, 5.0, 5.5, True, 0, "5", "true", "x", ["x"], {"a": "x"}]
# Words an error message uses for each type (DRF's own for lists and nested objects).
NAMES = {"string": ("string",), "integer": ("integer",), "number": ("number",),
         "boolean": ("boolean",), "array": ("array", "list"), "object": ("object", "dictionary")}

Path = tuple[str | int, ...]


def fits(value: Any, kinds: frozenset[str]) -> bool:
    """Whether ``value`` is of one of the JSON types ``kinds`` (5.0 is a number, not an
    integer: hango's integers are JSON integers)."""
    match value:
        case bool():
            return "boolean" in kinds
        case int():
            return bool({"integer", "number"} & kinds)
        case float():
            return "number" in kinds
        case str():
            return "string" in kinds
        case list():
            return "array" in kinds
        case dict():
            return "object" in kinds
    return False


def kinds_of(schema: dict[str, Any]) -> frozenset[str]:
    """The JSON types a schema declares (a type list, or a oneOf's branches); null aside."""
    branches = schema.get("oneOf") or schema.get("anyOf") or [schema]
    types = [b.get("type") for b in branches]
    names = [t for typ in types for t in (typ if isinstance(typ, list) else [typ])]
    return frozenset(name for name in names if name in NAMES)


def branch_for(schema: dict[str, Any], value: Any) -> dict[str, Any]:
    """The branch of a oneOf that ``value`` is in (the schema itself without one)."""
    for branch in schema.get("oneOf") or schema.get("anyOf") or []:
        if fits(value, kinds_of(branch)):
            return branch
    return schema


def typed_places(schema: dict[str, Any], value: Any, path: Path = ()) -> Iterator[
        tuple[Path, frozenset[str]]]:
    """Every place of ``value`` (a valid body) whose ``schema`` declares its JSON types."""
    kinds = kinds_of(schema)
    if kinds and path:
        yield path, kinds
    schema = branch_for(schema, value)
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        for name, item in value.items():
            sub = properties.get(name, extra if isinstance(extra, dict) else {})
            if not sub.get("readOnly"):
                yield from typed_places(sub, item, (*path, name))
    elif isinstance(value, list) and value:
        yield from typed_places(schema.get("items", {}), value[0], (*path, 0))


def replaced(body: Any, path: Path, wrong: Any) -> Any:
    body = copy.deepcopy(body)
    target = body
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = wrong
    return body


def at(detail: Any, path: Path) -> Any:
    """The error messages the detail holds for ``path`` (DRF nests them like the body; a
    jsonschema-checked field lists ``"a/b: message"`` lines under its name)."""
    node = detail.get("non_field_errors", detail) if isinstance(path[0], int) else detail
    for i, step in enumerate(path):
        if isinstance(node, dict) and str(step) in node:
            node = node[str(step)]
        elif isinstance(node, list) and isinstance(step, int) and len(node) > step \
                and isinstance(node[step], dict | list):
            node = node[step]
        elif isinstance(node, list) and all(isinstance(m, str) for m in node):
            rest = "/".join(str(s) for s in path[i:])
            return [m for m in node if m.startswith(rest + ":")]
        else:
            return None
    return node


def filled(body: Any, ids: dict[str, str]) -> Any:
    return json.loads(json.dumps(body).replace("{agent_id}", ids["agent_id"]))


def stored() -> tuple[int, ...]:
    return tuple(model.objects.count() for model in (Agent, MemoryFile, Skill, Session, Message,
                                                     ContextOverride))


def test_every_body_operation_has_a_valid_body():
    assert sorted(VALID) == sorted(op.operation_id for op in body_operations())


def test_the_walk_reaches_every_kind_of_place():
    kinds = {kind for op in body_operations() if op.operation_id in VALID
             for _, kinds in typed_places(op.body or {}, VALID[op.operation_id])
             for kind in kinds}
    assert kinds == set(NAMES)


@pytest.mark.parametrize("operation", body_operations(), ids=str)
def test_wrong_types_are_422_naming_the_place(alice, route_ids, operation: Operation):
    body = filled(VALID[operation.operation_id], route_ids)
    url = operation.url(route_ids)
    send = getattr(alice.client, operation.method)
    places = list(typed_places(operation.body or {}, body))
    assert places, operation
    before = stored()
    for path, kinds in places:
        for wrong in [value for value in CANDIDATES if not fits(value, kinds)]:
            response = send(url, replaced(body, path, wrong), format="json")
            case = (str(operation), path, wrong, response.content)
            error = error_of(response, 422, "validation_error")
            messages = at(error["detail"], path)
            assert messages, case
            assert any(name in str(messages).lower() for kind in kinds
                       for name in NAMES[kind]), case
    assert stored() == before
