"""No field of a body is dropped: walking every body operation of the schema, a key the body has
no field for — at the top or in any object the schema describes inside it — answers 422 naming
it, and nothing is written. The schema says the same: every such object is closed
(``additionalProperties: false``), but for the few that are maps by design."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest

from accounts.models import TenantPrice
from agents.models import Agent, MemoryFile, Skill
from context.models import ContextOverride
from integrations.models import Credential, McpServer
from runs.models import Message, Run, Session
from schedules.models import Schedule
from tests.support.api import error_of, errors_at
from tests.support.openapi import VALID, Operation, body_operations, valid_body
from webhooks.models import Endpoint

Path = tuple[str | int, ...]
UNKNOWN = "nmae"

# Objects whose keys are data, not fields: they take any key their values' schema admits.
MAPS: set[tuple[str, Path]] = {
    ("agents_create", ("config", "interrupt_on")),  # tool name -> decisions
    ("runs_approve", ("decisions", 0, "input")),  # an edited call's arguments
    ("sessions_context_try", ("replace",)),  # part id -> replacement text
    ("mcp_servers_create", ("headers",)),  # header name -> template
    ("mcp_servers_update", ("headers",)),
    ("eval_runs_create", ("overrides", "replace")),  # part id -> replacement text
    ("eval_suites_cases_create", ("setup", "files")),  # path -> content
    ("eval_suites_cases_update", ("setup", "files")),
}


def object_branch(schema: dict[str, Any]) -> dict[str, Any]:
    """The branch of a oneOf/anyOf that describes an object (the schema itself without one)."""
    for branch in schema.get("oneOf") or schema.get("anyOf") or []:
        kinds = branch.get("type")
        if "properties" in branch or kinds == "object" or "object" in (kinds or ()):
            return branch
    return schema


def object_places(schema: dict[str, Any], value: Any, path: Path = ()) -> Iterator[
        tuple[Path, dict[str, Any]]]:
    """Every object in ``value`` (a valid body) with the schema that describes it; a map's
    values are walked too."""
    if isinstance(value, dict):
        schema = object_branch(schema)
        yield path, schema
        properties, extra = schema.get("properties", {}), schema.get("additionalProperties")
        for name, item in value.items():
            sub = properties.get(name, extra if isinstance(extra, dict) else {})
            yield from object_places(sub, item, (*path, name))
    elif isinstance(value, list) and value:
        yield from object_places(schema.get("items", {}), value[0], (*path, 0))


def closed_places(operation: Operation, body: Any) -> list[Path]:
    return [path for path, _ in object_places(operation.body or {}, body)
            if (operation.operation_id, path) not in MAPS]


def with_unknown(body: Any, path: Path) -> Any:
    body = copy.deepcopy(body)
    target = body
    for step in path:
        target = target[step]
    target[UNKNOWN] = "x"
    return body


def stored() -> tuple[int, ...]:
    models = (Agent, MemoryFile, Skill, Session, Message, Run, ContextOverride, Endpoint,
              Schedule, TenantPrice, McpServer, Credential)
    return tuple(model.objects.count() for model in models)


def test_every_object_of_every_body_is_closed_but_the_maps():
    for operation in body_operations():
        places = dict(object_places(operation.body or {}, VALID[operation.operation_id]))
        assert places, operation
        for path, schema in places.items():
            extra = schema.get("additionalProperties")
            if (operation.operation_id, path) in MAPS:
                assert extra not in (None, False), (str(operation), path)
            else:
                assert extra is False, (str(operation), path, schema)


def test_the_maps_are_in_the_bodies():
    found = {(op.operation_id, path) for op in body_operations()
             for path, _ in object_places(op.body or {}, VALID[op.operation_id])}
    assert found >= MAPS


@pytest.mark.parametrize("operation", body_operations(), ids=str)
def test_an_unknown_field_is_422_naming_it_wherever_it_is(alice, route_ids,
                                                          operation: Operation):
    body = valid_body(operation, route_ids)
    send = getattr(alice.client, operation.method)
    url = operation.url(route_ids)
    places = closed_places(operation, body)
    assert places, operation
    before = stored()
    for path in places:
        response = send(url, with_unknown(body, path), format="json")
        case = (str(operation), path, response.content)
        error = error_of(response, 422, "validation_error")
        messages = errors_at(error["detail"], (*path, UNKNOWN))
        assert messages, case
        assert all("Unknown field" in m or "Extra inputs" in m for m in messages), case
    assert stored() == before
