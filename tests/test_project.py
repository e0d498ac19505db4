"""Project-wide checks: migrations in sync and landed ones unchanged, a valid OpenAPI schema,
the harness boundary, the architecture document's module table."""

from __future__ import annotations

import ast
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from django.core.management import call_command

from tests.support.openapi import operations
from tools import migration_manifest, module_table

ROOT = Path(__file__).resolve().parent.parent


def test_migrations_are_in_sync(db):
    call_command("makemigrations", "--check", "--dry-run", stdout=io.StringIO())


def test_every_app_keeps_migrations_in_the_top_level_package():
    for app in ("accounts", "integrations", "agents", "runs", "context", "webhooks", "schedules",
                "evals"):
        assert (ROOT / "migrations" / app / "__init__.py").exists()
        assert not (ROOT / app / "migrations").exists()


def test_landed_migrations_are_as_they_landed():
    """Every migration is in ``migrations/manifest.sha256`` with the hash it landed with."""
    assert len(migration_manifest.read_manifest()) >= 37  # a manifest emptied would pass
    problems = migration_manifest.check()
    assert not problems, problems.report()


def test_openapi_schema_validates_without_warnings(tmp_path):
    out = tmp_path / "schema.yaml"
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(out))
    schema = yaml.safe_load(out.read_text())
    assert schema["openapi"].startswith("3.")
    for path in ("/v1/agents", "/v1/agents/{agent_id}", "/v1/sessions",
                 "/v1/sessions/{session_id}", "/v1/sessions/{session_id}/messages", "/healthz"):
        assert path in schema["paths"], path
    assert "Error" in schema["components"]["schemas"]
    assert schema["components"]["securitySchemes"]["ApiKey"]["scheme"] == "bearer"


LISTS = {"agents_list", "agents_memory_list", "skills_list", "sessions_list",
         "sessions_messages_list", "sessions_runs_list", "sessions_files_list", "audit_list",
         "webhooks_list", "webhooks_deliveries_list", "schedules_list", "schedules_fires_list",
         "prices_list", "mcp_servers_list", "credentials_list", "eval_suites_list",
         "eval_suites_cases_list", "eval_runs_list", "agents_versions_list"}


def test_list_routes_are_documented_as_the_pages_they_answer():
    listed = set()
    for operation in operations():
        page = operation.response("200")
        if operation.method != "get" or page is None:
            continue
        assert page.get("type") == "object", operation  # no route answers a bare array
        if "next" in page["properties"]:
            listed.add(operation.operation_id)
            assert {"results", "next", "previous"} <= set(page["required"]), operation
            assert page["properties"]["results"]["type"] == "array"
            assert page["properties"]["next"]["type"] == ["string", "null"]
            names = {p["name"] for p in operation.spec["parameters"]}
            assert {"cursor", "limit"} <= names, operation
    assert listed == LISTS | {"usage_list", "schedules_usage"}


def test_the_event_stream_is_documented():
    (events,) = [op for op in operations() if op.operation_id == "runs_events"]
    assert events.response("200")["properties"].keys() == {"results", "next_after"}
    # each event (OpenAPI before 3.2 describes an event stream by one event), its data the JSON
    # of a run event
    durable, delta = events.response("200", "text/event-stream")["oneOf"]
    assert set(durable["required"]) == {"id", "event", "data"}
    data = durable["properties"]["data"]
    assert data["contentMediaType"] == "application/json"
    assert set(data["contentSchema"]["properties"]) == {"seq", "type", "data", "created_at"}
    # a live delta: no id, so Last-Event-ID resumes the run events
    assert set(delta["required"]) == {"event", "data"} and delta["properties"]["id"]["not"] == {}
    assert delta["properties"]["event"] == {"const": "message.delta"}
    assert set(delta["properties"]["data"]["contentSchema"]["required"]) == {
        "run", "turn", "index", "text"}
    error = events.response("404", "text/event-stream")["properties"]
    assert error["event"] == {"const": "error"}
    assert error["data"]["contentSchema"]["required"] == ["error"]


def test_error_responses_are_documented_as_they_are():
    by_id = {op.operation_id: op for op in operations()}
    for operation in by_id.values():
        if not operation.spec.get("security", [{}]) or operation.path == "/healthz":
            continue
        codes = set(operation.spec["responses"])
        assert {"400", "401", "406", "429"} <= codes, operation
        assert ("415" in codes) == (operation.body is not None), operation
        for code in codes - {"200", "201", "202", "204"}:
            assert operation.response(code)["required"] == ["error"], (operation, code)
        assert "Retry-After" in operation.spec["responses"]["429"]["headers"]
    for op_id in ("sessions_messages_create", "runs_cancel", "runs_resume", "runs_approve",
                  "agents_memory_create", "skills_create", "sessions_context_retrieve"):
        assert "409" in by_id[op_id].spec["responses"], op_id
    for op_id in ("sessions_messages_create", "runs_resume", "runs_approve",
                  "sessions_context_try"):
        assert "402" in by_id[op_id].spec["responses"], op_id
    assert "502" in by_id["sessions_context_try"].spec["responses"]
    assert {"403"} <= set(by_id["audit_list"].spec["responses"])


def test_schema_and_docs_are_served(client):
    schema = client.get("/v1/schema")
    assert schema.status_code == 200
    # JSON unless YAML is asked for, by ?format= or by Accept.
    assert schema["Content-Type"] == "application/json"
    assert json.loads(schema.content)["openapi"].startswith("3.1")
    for yaml_please in ({"QUERY_STRING": "format=yaml"}, {"HTTP_ACCEPT": "application/yaml"}):
        answer = client.get("/v1/schema", **yaml_please)
        assert answer.status_code == 200 and "yaml" in answer["Content-Type"], yaml_please
        assert yaml.safe_load(answer.content) == json.loads(schema.content)
    docs = client.get("/v1/docs")
    assert docs.status_code == 200
    assert b"swagger-ui" in docs.content.lower()


FORBIDDEN = ("django", "celery", "rest_framework", "kombu")


def _imported_roots(path: Path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


@pytest.mark.slow
def test_harness_imports_no_framework():
    files = sorted((ROOT / "harness").rglob("*.py"))
    assert files
    for path in files:
        assert not (_imported_roots(path) & set(FORBIDDEN)), path
    # And at run time: importing every harness module loads no framework.
    modules = [".".join(p.relative_to(ROOT).with_suffix("").parts) for p in files]
    modules = [m.removesuffix(".__init__") for m in modules]
    code = (
        "import importlib, sys\n"
        f"for m in {modules!r}: importlib.import_module(m)\n"
        f"bad = [m for m in sys.modules if m.split('.')[0] in {FORBIDDEN!r}]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)



def test_the_architecture_module_table_is_the_modules_own_docstrings():
    doc = module_table.DOC.read_text()
    assert "<!-- modules: harness -->" in doc  # a table removed would pass vacuously
    generated = module_table.render(doc).splitlines()
    assert doc.splitlines() == generated, "run: python tools/module_table.py"

@pytest.mark.slow
def test_otel_environment_configures_the_sdk(tmp_path):
    code = (
        "import django; django.setup()\n"
        "from opentelemetry import trace\n"
        "from opentelemetry.sdk.trace import TracerProvider\n"
        "assert isinstance(trace.get_tracer_provider(), TracerProvider)\n"
        "with trace.get_tracer('t').start_as_current_span('configured-span'): pass\n"
        "trace.get_tracer_provider().force_flush()\n"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "hango_project.settings",
           "OTEL_TRACES_EXPORTER": "console", "OTEL_SERVICE_NAME": "hango-test"}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, check=True,
                         capture_output=True, text=True)
    assert '"name": "configured-span"' in out.stdout
    assert "hango-test" in out.stdout
