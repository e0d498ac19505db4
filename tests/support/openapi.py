"""The API's own OpenAPI schema, generated in-process, and its operations as requests a test can
send: tests that walk every route read the routes from here, so a new route is walked too; and a
valid body for each operation that reads one, for the walks that spoil it one place at a time."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from drf_spectacular.generators import SchemaGenerator

from tests.support.api import AGENT_BODY


@functools.cache
def api_schema() -> dict[str, Any]:
    """The schema ``GET /v1/schema`` serves (generated once per test process)."""
    return SchemaGenerator().get_schema(request=None, public=True)


def resolved(node: Any, schema: Mapping[str, Any] | None = None) -> Any:
    """``node`` with every ``$ref`` replaced by what it points to."""
    schema = schema or api_schema()
    if isinstance(node, dict):
        if "$ref" in node:
            target: Any = schema
            for part in node["$ref"].removeprefix("#/").split("/"):
                target = target[part]
            return resolved(target, schema)
        return {key: resolved(value, schema) for key, value in node.items()}
    if isinstance(node, list):
        return [resolved(item, schema) for item in node]
    return node


@dataclass(frozen=True)
class Operation:
    method: str
    path: str  # the template: /v1/agents/{agent_id}
    operation_id: str
    body: dict[str, Any] | None  # the JSON request body's schema, resolved; None without one
    spec: dict[str, Any]  # the operation object as the schema has it (not resolved)

    def url(self, ids: Mapping[str, str]) -> str:
        """The path with its parameters filled from ``ids`` (``{"agent_id": …, "path": …}``)."""
        return self.path.format(**ids)

    def response(self, code: str, media_type: str = "application/json") -> dict[str, Any] | None:
        """The resolved schema of one documented response, or None."""
        content = self.spec["responses"].get(code, {}).get("content", {})
        return resolved(content[media_type]["schema"]) if media_type in content else None

    def __str__(self) -> str:
        return f"{self.method.upper()} {self.path}"


def operations() -> list[Operation]:
    found = []
    for path, methods in api_schema()["paths"].items():
        for method, operation in methods.items():
            content = operation.get("requestBody", {}).get("content", {})
            body = content.get("application/json", {}).get("schema")
            found.append(Operation(method, path, operation["operationId"],
                                   resolved(body) if body is not None else None, operation))
    return found


def body_operations() -> list[Operation]:
    """Every operation that reads a JSON body."""
    return [op for op in operations() if op.body is not None]


# A body each operation accepts (or refuses for reasons other than its content's shape: the
# run is not awaiting approval, the message would have no user message before it): the walks
# of every body (tests/scenarios/test_strict_types.py, test_unknown_fields.py) change one
# thing in it at a time. Ids in braces are filled by :func:`valid_body`.
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
    "sessions_create": {"agent": "{agent_id}", "title": "t", "agent_version": 1},
    "sessions_update": {"title": "u", "agent_version": 1},
    "sessions_messages_create": {"content": "hi"},
    "runs_approve": {"decisions": [{"tool_use_id": "t1", "type": "edit", "input": {}},
                                   {"tool_use_id": "t2", "type": "reject", "message": "no"}]},
    "runs_tool_results": {"results": [
        {"tool_use_id": "t1", "output": "x", "is_error": True},
        {"tool_use_id": "t2", "output": [{"type": "text", "text": "y"}]}]},
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
    "eval_suites_create": {"name": "other", "description": "d"},
    "eval_suites_update": {"name": "renamed", "description": "e"},
    "eval_suites_cases_create": {"name": "other", "turns": ["hi"],
                                 "setup": {"files": {"/notes.md": "x"}},
                                 "graders": [{"type": "contains", "value": "hi"}]},
    "eval_suites_cases_update": {"name": "renamed", "turns": ["hello"], "setup": {"files": {}},
                                 "graders": [{"type": "no_tool_called"}]},
    "eval_suites_cases_from_session": {"session": "{session_id}", "name": "replayed",
                                       "expect": "none"},
    "eval_runs_create": {"suite": "{suite_id}", "agent": "{agent_id}", "version": None,
                         "overrides": {"exclude": ["system:todo"],
                                       "replace": {"system:agent": "x"}}},
}


def valid_body(operation: Operation, ids: Mapping[str, str]) -> Any:
    """:data:`VALID`'s body for ``operation``, its ids in braces (``{agent_id}``) filled from
    ``ids``."""
    body = json.dumps(VALID[operation.operation_id])
    for name in ("agent_id", "session_id", "suite_id"):
        body = body.replace("{" + name + "}", ids.get(name, ""))
    return json.loads(body)
