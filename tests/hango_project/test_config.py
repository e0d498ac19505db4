"""hango's settings object: parsing the environment, failing at start-up on a bad value, validated
overrides, and the generated configuration reference (tools/config_reference.py) true to it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured
from pydantic import AliasChoices, ValidationError

from hango_project.config import HangoSettings, from_environment, hango
from hango_project.variables import BASE_DIR
from tools import config_reference

ROOT = Path(__file__).resolve().parents[2]


def variables_of(field: str) -> tuple[str, ...]:
    alias = HangoSettings.model_fields[field].validation_alias
    if isinstance(alias, AliasChoices):
        return tuple(str(choice) for choice in alias.choices)
    assert isinstance(alias, str), field
    return (alias,)


FIELD_OF = {name: field for field in HangoSettings.model_fields for name in variables_of(field)}


@pytest.fixture
def environ(monkeypatch):
    """No variable the settings read is set; the test sets its own."""
    for name in FIELD_OF:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


# -- parsing ------------------------------------------------------------------------------------


def test_an_empty_variable_counts_as_unset(environ):
    environ.setenv("HANGO_PAGE_SIZE", "")
    environ.setenv("HANGO_VAR_DIR", "")
    parsed = HangoSettings()
    assert parsed.page_size == 50
    assert parsed.var_dir == BASE_DIR / "var"


def test_the_broker_url_has_two_names_and_feeds_the_rate_limit_default(environ):
    environ.setenv("CELERY_BROKER_URL", "")
    environ.setenv("HANGO_BROKER_URL", "redis://127.0.0.1:6379/3")
    parsed = HangoSettings()
    assert parsed.broker_url == "redis://127.0.0.1:6379/3"
    assert parsed.rate_limit_redis_url == "redis://127.0.0.1:6379/3"
    environ.setenv("CELERY_BROKER_URL", "amqp://127.0.0.1//")
    parsed = HangoSettings()
    assert parsed.broker_url == "amqp://127.0.0.1//"
    assert parsed.rate_limit_redis_url == ""  # not Redis: in-process counting
    environ.setenv("HANGO_RATE_LIMIT_REDIS_URL", "redis://127.0.0.1:6379/4")
    assert HangoSettings().rate_limit_redis_url == "redis://127.0.0.1:6379/4"


def test_paths_and_lists(environ, tmp_path):
    environ.setenv("HANGO_VAR_DIR", str(tmp_path))
    environ.setenv("DJANGO_ALLOWED_HOSTS", " api.example, ,admin.example ")
    environ.setenv("DJANGO_CSRF_TRUSTED_ORIGINS", "   ")
    parsed = HangoSettings()
    assert parsed.static_root == tmp_path / "static"
    assert parsed.allowed_hosts == ["api.example", "admin.example"]
    assert parsed.csrf_trusted_origins == []


@pytest.mark.parametrize("raw,expected", [("1", True), (" yes ", True), ("on", True),
                                          ("0", False), ("false", False), ("off", False)])
def test_flags(environ, raw, expected):
    environ.setenv("HANGO_RUN_INLINE", raw)
    assert HangoSettings().run_inline is expected


def test_the_operators_stdio_mcp_servers_are_a_json_object_checked_at_start_up(environ):
    environ.setenv("HANGO_MCP_STDIO_SERVERS", json.dumps(
        {"time": {"command": "mcp-server-time", "args": ["--local-timezone", "UTC"]},
         "docs.v2": {"command": "/opt/docs", "env": {"DOCS_ROOT": "/srv/docs"}}}))
    servers = HangoSettings().mcp_stdio_servers
    assert servers["time"].command == "mcp-server-time"
    assert servers["time"].args == ["--local-timezone", "UTC"] and servers["time"].env == {}
    assert servers["docs.v2"].env == {"DOCS_ROOT": "/srv/docs"}
    for bad, where in [("not json", "HANGO_MCP_STDIO_SERVERS"), ("[]", "HANGO_MCP_STDIO_SERVERS"),
                       ('{"t": {"cmd": "x"}}', "HANGO_MCP_STDIO_SERVERS.t"),
                       ('{"t": {"command": ""}}', "HANGO_MCP_STDIO_SERVERS.t.command"),
                       ('{"t": {"command": "x", "args": "-v"}}', "HANGO_MCP_STDIO_SERVERS.t.args"),
                       ('{"a b": {"command": "x"}}', "HANGO_MCP_STDIO_SERVERS.a b")]:
        environ.setenv("HANGO_MCP_STDIO_SERVERS", bad)
        with pytest.raises(ImproperlyConfigured) as refused:
            from_environment()
        assert where in str(refused.value), bad


def test_names_are_case_sensitive_as_the_environment_is(environ):
    environ.setenv("hango_page_size", "7")
    environ.setenv("page_size", "8")  # a field's own name is no variable either
    environ.setenv("debug", "1")
    parsed = HangoSettings()
    assert parsed.page_size == 50 and parsed.debug is False


def test_secrets_stay_out_of_reprs(environ):
    environ.setenv("ANTHROPIC_API_KEY", "sk-ant-not-for-logs")
    environ.setenv("DATABASE_URL", "postgres://hango:hunter2@db/hango")
    parsed = HangoSettings()
    assert parsed.anthropic_api_key is not None
    assert parsed.anthropic_api_key.get_secret_value() == "sk-ant-not-for-logs"
    for text in (repr(parsed), str(parsed), str(parsed.model_dump())):
        assert "sk-ant-not-for-logs" not in text and "hunter2" not in text


def test_every_field_says_what_it_means():
    for name, field in HangoSettings.model_fields.items():
        assert field.description, name


# -- start-up -----------------------------------------------------------------------------------

SETUP = "import django; django.setup()"


def start(command: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={**env, "DJANGO_SETTINGS_MODULE": "hango_project.settings"})


@pytest.mark.slow
@pytest.mark.parametrize("command", [["-c", SETUP], ["manage.py", "check"]])
def test_a_bad_value_stops_start_up_naming_the_variable(command):
    result = start([sys.executable, *command], {
        **os.environ, "HANGO_RUN_LEASE_SECONDS": "abc-not-a-number", "DJANGO_DEBUG": "2"})
    assert result.returncode != 0
    assert "HANGO_RUN_LEASE_SECONDS" in result.stderr
    assert "DJANGO_DEBUG" in result.stderr  # every bad variable, not just the first
    assert "abc-not-a-number" not in result.stderr  # a value may be a secret: never echoed


@pytest.mark.slow
def test_with_nothing_set_django_runs_on_the_embedded_defaults(tmp_path):
    code = SETUP + """
import json
from django.conf import settings as s
print(json.dumps([s.DATABASES["default"]["NAME"], s.DEBUG, s.ALLOWED_HOSTS, s.CELERY_BROKER_URL,
                  s.CELERY_TASK_ALWAYS_EAGER, str(s.STATIC_ROOT), s.CELERY_BROKER_TRANSPORT_OPTIONS,
                  s.DATA_UPLOAD_MAX_MEMORY_SIZE, s.LOGGING["root"]["level"]]))
"""
    result = start([sys.executable, "-c", code],
                   {"PATH": os.environ["PATH"], "HANGO_VAR_DIR": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.strip().splitlines()[-1]) == [
        str(tmp_path / "hango.sqlite3"), False, ["127.0.0.1", "localhost", "[::1]", "testserver"],
        "memory://", True, str(tmp_path / "static"),
        {"visibility_timeout": 3600, "socket_connect_timeout": 3.0, "socket_timeout": 3.0},
        1024 * 1024, "INFO",
    ]
    assert (tmp_path / "secret_key").exists()


# -- overrides (the hango_settings fixture) -----------------------------------------------------


def test_an_override_changes_only_what_it_names(hango_settings):
    before = hango()
    after = hango_settings(page_size=3, run_lease_seconds=0.3)
    assert hango() is after
    assert (after.page_size, after.run_lease_seconds) == (3, 0.3)
    assert after.model_dump(exclude={"page_size", "run_lease_seconds"}) == before.model_dump(
        exclude={"page_size", "run_lease_seconds"})


@pytest.mark.parametrize("changes", [
    {"page_sise": 3},  # a typo
    {"PAGE_SIZE": 3},  # the old dict key
    {"page_size": "3"},
    {"page_size": 2.5},
    {"run_inline": "yes"},
    {"broker_url": None},
    {"reconcile_seconds": 0},  # every worker's reconciler would spin
    {"broker_timeout": 0},
])
def test_an_override_is_validated(hango_settings, changes):
    before = hango()
    with pytest.raises(ValidationError):
        hango_settings(**changes)
    assert hango() is before


def test_an_override_does_not_read_the_environment_again(hango_settings, monkeypatch):
    before = hango()
    monkeypatch.setenv("HANGO_MAX_PAGE_SIZE", "7")
    monkeypatch.setenv("HANGO_RUN_SLICE_SECONDS", "not a number")
    after = hango_settings(page_size=3)
    assert after.max_page_size == before.max_page_size
    assert after.run_slice_seconds == before.run_slice_seconds


def test_the_settings_are_frozen():
    with pytest.raises(ValidationError):
        hango().page_size = 1  # type: ignore[misc]


# -- the configuration reference the docs site generates --------------------------------------

LITERAL = re.compile(r"^`([^`]*)`$")


def reference_rows() -> list[tuple[list[str], list[str]]]:
    """(variables, default parts) of each row of the reference's tables, one table a group."""
    text = config_reference.page()
    tables = text.split(config_reference.HEADER)[1:]
    assert len(tables) >= 8, "a table per group of hango_project/variables.py"
    rows = []
    for table in tables:
        for line in table.split("\n\n", 1)[0].strip().splitlines()[1:]:
            names_cell, default_cell = [cell.strip() for cell in line.strip("|").split("|")][:2]
            names = re.findall(r"`([A-Z][A-Z0-9_]*)`", names_cell)
            assert names, line
            rows.append((names, [part.strip() for part in default_cell.split(" / ")]))
    return rows


def test_the_reference_names_every_variable_once():
    in_table = [name for names, _ in reference_rows() for name in names]
    assert len(in_table) == len(set(in_table)), "a variable listed twice"
    assert set(in_table) == set(FIELD_OF)


def test_the_reference_defaults_are_the_real_ones(environ):
    defaults = HangoSettings()
    compared = 0
    for names, parts in reference_rows():
        if len(parts) == 1:
            parts = parts * len(names)
        assert len(parts) == len(names), names
        for name, part in zip(names, parts, strict=True):
            field = FIELD_OF[name]
            default = getattr(defaults, field)
            if part == "none":
                assert not default, name
                continue
            literal = LITERAL.match(part)
            if literal is None:
                continue  # described in words (a derived default)
            environ.setenv(name, literal.group(1))
            value = getattr(HangoSettings(), field)
            environ.delenv(name)
            if isinstance(default, Path):
                value = BASE_DIR / value
            assert value == default, name
            compared += 1
    assert compared >= 30  # the check is not vacuous
