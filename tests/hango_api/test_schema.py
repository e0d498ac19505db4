"""hango_api.schema: the JSON Schemas the code validates with are published as they are
(OpenAPI 3.1's dialect is JSON Schema 2020-12), and the error shape on every operation that can
answer it."""

from __future__ import annotations

from hango_api.schema import published
from harness.agent import CONFIG_SCHEMA, TOOL_LIST_SCHEMA
from tests.support.openapi import api_schema, resolved


def test_a_validating_schema_is_published_as_it_is():
    config = published(CONFIG_SCHEMA, "Options.")
    assert "$schema" not in config and config["description"] == "Options."
    assert {k: v for k, v in config.items() if k != "description"} == {
        k: v for k, v in CONFIG_SCHEMA.items() if k != "$schema"}


def test_the_agent_routes_publish_the_schemas_they_validate_with():
    schemas = api_schema()["components"]["schemas"]
    assert api_schema()["openapi"].startswith("3.1")
    body = resolved(schemas["AgentInputRequest"])
    config = {k: v for k, v in body["properties"]["config"].items() if k != "description"}
    assert config == {k: v for k, v in CONFIG_SCHEMA.items() if k != "$schema"}
    tools = {k: v for k, v in body["properties"]["allowed_tools"].items() if k != "description"}
    assert tools == {**TOOL_LIST_SCHEMA, "type": ["array", "null"]}  # the fields allow null
    for name in ("AgentOutput", "SkillInputRequest", "SkillOutput"):
        assert schemas[name]["properties"]["allowed_tools"]["type"] == ["array", "null"], name
