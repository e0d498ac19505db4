"""The SDK against the API's own schema, as ``GET /v1/schema`` serves it: every route the SDK
declares is an operation of the API (method, path template, query parameters, body fields, the
body's required fields required in the SDK too), and every operation of the API is declared
by the SDK or listed below with the reason it is not. A route added to either side without the
other fails here, so the two cannot drift apart."""

from __future__ import annotations

import inspect
import json
from typing import Any

import hango_client.resources as resources
import pytest
from hango_client._endpoint import Endpoint, Events, Route

# Declared by the SDK, not yet served (none now); the test then holds the route to the schema.
PENDING: dict[tuple[str, str], str] = {}
# Operations of the API the SDK does not declare, and why.
NOT_COVERED = {
    ("GET", "/healthz"): "Client.health() sends it without a key, outside the declared routes",
}


@pytest.fixture(scope="module")
def schema(django_db_blocker) -> dict[str, Any]:
    from django.test import Client as DjangoClient

    with django_db_blocker.unblock():
        response = DjangoClient().get("/v1/schema")  # its default, JSON, as a client reads it
    assert response.status_code == 200
    return json.loads(response.content)


def sdk_routes() -> list[tuple[str, Route, Any]]:
    """(``Group.method``, its route, its declared function) of every route the SDK declares."""
    found = []
    for group_name in resources.__all__:
        group = getattr(resources, group_name)
        for name, member in vars(group).items():
            if isinstance(member, Endpoint | Events):
                found.append((f"{group_name}.{name}", member.route, member.fn))
    return found


def operation(schema: dict[str, Any], route: Route) -> dict[str, Any] | None:
    return schema["paths"].get(route.template, {}).get(route.method.lower())


def body_schema(schema: dict[str, Any], op: dict[str, Any]) -> dict[str, Any] | None:
    node = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
    while isinstance(node, dict) and "$ref" in node:
        node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]]
    return node


def test_the_sdk_declares_the_routes_it_should():
    declared = {(route.method, route.template) for _, route, _ in sdk_routes()}
    assert ("GET", "/v1/runs/{run_id}/events") in declared
    assert len(declared) > 60


@pytest.mark.parametrize(("name", "route", "fn"), sdk_routes(), ids=lambda v: v
                         if isinstance(v, str) else "")
def test_each_sdk_route_is_an_operation_of_the_schema(schema, name, route, fn):
    op = operation(schema, route)
    if (route.method, route.template) in PENDING:
        assert op is None, f"{name}: the route is served now: take it out of PENDING"
        return
    assert op is not None, f"{name}: {route.method} {route.template} is not in /v1/schema"
    query = {p["name"] for p in op.get("parameters", []) if p["in"] == "query"}
    assert set(route.query) <= query, f"{name}: unknown query parameters"
    path_params = {p["name"] for p in op.get("parameters", []) if p["in"] == "path"}
    assert set(route.path_params) == path_params, name
    body = body_schema(schema, op)
    fields = route.body_fields(fn)
    if route.body is not None:  # one argument is the whole body
        assert body is not None and body["type"] == "array", name
        return
    if body is None:
        assert not fields, f"{name} sends fields to a route that reads no body: {fields}"
        return
    assert set(fields) <= set(body["properties"]), f"{name}: fields the API does not read"
    parameters = inspect.signature(fn).parameters
    for required in body.get("required", []):
        assert parameters[required].default is inspect.Parameter.empty, (
            f"{name}: {required} is required by the API, optional in the SDK")


def test_every_operation_of_the_schema_is_declared_or_excused(schema):
    declared = {(route.method, route.template) for _, route, _ in sdk_routes()}
    missing = [(method.upper(), path) for path, methods in schema["paths"].items()
               for method in methods
               if (method.upper(), path) not in declared | set(NOT_COVERED)]
    assert not missing, f"operations the SDK neither declares nor excuses: {missing}"
    stale = [key for key in NOT_COVERED if operation(schema, Route(*key)) is None]
    assert not stale, f"excused operations the API no longer has: {stale}"
