"""hango_project.schema: the JSON Schemas the code validates with are published as OpenAPI 3.0
schema objects, and the error shape on every operation that can answer it."""

from __future__ import annotations

from agents.config import ALLOWED_TOOLS_SCHEMA
from hango_project.schema import openapi_schema
from harness.agent import CONFIG_SCHEMA
from tests.support.openapi import api_schema, resolved


def _keys(node, found=None) -> set[str]:
    found = set() if found is None else found
    if isinstance(node, dict):
        for key, value in node.items():
            found.add(key)
            _keys(value, found)
    elif isinstance(node, list):
        for item in node:
            _keys(item, found)
    return found


def test_draft_2020_12_becomes_openapi_3_0():
    config = openapi_schema(CONFIG_SCHEMA, "Options.")
    assert not {"$schema", "propertyNames"} & _keys(config)
    assert config["description"] == "Options."
    fraction = config["properties"]["summarization"]["properties"]["trigger_fraction"]
    assert fraction == {"type": "number", "minimum": 0, "exclusiveMinimum": True, "maximum": 1}
    assert config["properties"]["interrupt_on"]["description"].startswith("Keys match `^")
    tools = openapi_schema(ALLOWED_TOOLS_SCHEMA)
    assert tools["type"] == "array" and tools["nullable"] is True
    assert tools["items"]["pattern"] == CONFIG_SCHEMA["properties"]["subagents"]["items"][
        "properties"]["tools"]["items"]["pattern"]


def test_the_agent_routes_publish_the_schemas_they_validate_with():
    body = resolved(api_schema()["components"]["schemas"]["AgentInputRequest"])
    assert body["properties"]["config"]["properties"].keys() == CONFIG_SCHEMA["properties"].keys()
    assert body["properties"]["config"]["additionalProperties"] is False
    assert body["properties"]["allowed_tools"]["nullable"] is True
