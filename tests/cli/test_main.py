"""The ``hango`` command against a real server: pytest-django's live_server on PostgreSQL."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner

from cli.main import cli
from tests.support.cli import create_agent, ok_json
from tests.support.servers import free_port


def test_agent_and_session_round_trip(hango):
    created = hango("agents", "create", "--name", "cli-helper", "--model", "scripted:demo",
                    "--system-prompt", "You [bold]help[/bold].", "--description", "Helps.")
    assert created.exit_code == 0, created.stderr
    # Printed as data, never read as rich markup.
    assert "You [bold]help[/bold]." in created.stdout

    listed = hango("agents", "list")
    assert listed.exit_code == 0, listed.stderr
    assert "cli-helper" in listed.stdout
    assert "scripted:demo" in listed.stdout

    agent_id = ok_json(hango("--json", "agents", "list"))["results"][0]["id"]
    shown = hango("agents", "show", agent_id)
    assert shown.exit_code == 0, shown.stderr
    assert agent_id in shown.stdout and "Helps." in shown.stdout

    session = ok_json(
        hango("--json", "sessions", "create", "--agent", agent_id, "--title", "first chat")
    )
    assert session["agent"] == agent_id and session["title"] == "first chat"
    assert "first chat" in hango("sessions", "list").stdout
    assert ok_json(hango("sessions", "show", session["id"], "--json"))["id"] == session["id"]

    messages = hango("sessions", "messages", session["id"])
    assert messages.exit_code == 0, messages.stderr
    assert "No messages." in messages.stdout
    assert ok_json(hango("--json", "sessions", "messages", session["id"]))["results"] == []


def test_json_flag_prints_the_api_objects(hango):
    agent = create_agent(hango)
    assert agent["name"] == "cli-helper" and agent["model"] == "scripted:demo"
    # --json is accepted after the command too.
    assert ok_json(hango("agents", "show", agent["id"], "--json")) == agent
    page = ok_json(hango("agents", "list", "--json"))
    assert set(page) == {"results", "next", "previous"}
    assert [a["id"] for a in page["results"]] == [agent["id"]]


def test_all_follows_next_links(hango):
    ids = {create_agent(hango, f"agent-{n}")["id"] for n in range(3)}

    first = hango("agents", "list", "--limit", "2")
    assert first.exit_code == 0, first.stderr
    assert "--all" in first.stderr
    assert len(ok_json(hango("--json", "agents", "list", "--limit", "2"))["results"]) == 2

    every = ok_json(hango("--json", "agents", "list", "--limit", "2", "--all"))
    assert {a["id"] for a in every["results"]} == ids
    assert every["next"] is None
    table = hango("agents", "list", "--limit", "2", "--all")
    assert all(f"agent-{n}" in table.stdout for n in range(3))
    assert table.stderr == ""


def test_delete_agent(hango):
    agent = create_agent(hango)
    deleted = hango("agents", "delete", agent["id"])
    assert deleted.exit_code == 0, deleted.stderr
    assert hango("agents", "show", agent["id"]).exit_code == 1


def test_unknown_id_is_an_api_error(hango):
    result = hango("agents", "show", str(uuid.uuid4()))
    assert result.exit_code == 1
    assert result.stderr.startswith("error 404 not_found: ")
    assert result.stdout == ""


def test_invalid_input_shows_the_problem(hango):
    result = hango("agents", "create", "--name", "x", "--model", "no-provider")
    assert result.exit_code == 1
    assert result.stderr.startswith("error 422 validation_error: ")
    assert "model:" in result.stderr

    agent_missing = hango("sessions", "create", "--agent", str(uuid.uuid4()))
    assert agent_missing.exit_code == 1
    assert "validation_error" in agent_missing.stderr


def test_agents_create_reads_its_config_from_a_file_or_standard_input(hango, tmp_path):
    config = {"max_turns": 7, "interrupt_on": {"word_count": ["approve", "reject"]}}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    create = ("--json", "agents", "create", "--name", "careful", "--model", "scripted:demo")
    assert ok_json(hango(*create, "--config", str(path)))["config"] == config
    assert ok_json(hango(*create, "--config", "-", input=json.dumps(config)))["config"] == config

    # What the server refuses, it says why, as for the API.
    path.write_text('{"max_turns": "many"}')
    refused = hango(*create, "--config", str(path))
    assert refused.exit_code == 1
    assert refused.stderr.startswith("error 422 validation_error: ")
    assert "config" in refused.stderr
    # Not JSON, or no file: the argument is wrong, and nothing is sent.
    path.write_text('{"max_turns": 7,}')
    not_json = hango(*create, "--config", str(path))
    assert not_json.exit_code == 2
    assert "--config" in not_json.stderr and "not JSON" in not_json.stderr
    assert "line 1 column 17" in not_json.stderr
    missing = hango(*create, "--config", str(tmp_path / "nope.json"))
    assert missing.exit_code == 2 and "nope.json" in missing.stderr
    assert ok_json(hango("--json", "agents", "list"))["results"][0]["config"] == config


def test_missing_key_says_how_to_get_one(hango):
    result = hango("agents", "list", env={"HANGO_API_KEY": None})
    assert result.exit_code == 2
    assert "HANGO_API_KEY" in result.stderr
    assert "python manage.py hango_bootstrap --tenant NAME --email EMAIL" in result.stderr


def test_whoami_names_the_tenant_s_id_the_member_the_role_and_the_key(hango, member_key):
    from accounts.models import Tenant

    tenant = Tenant.objects.get(name="cli")
    shown = hango("whoami", env={"HANGO_API_KEY": member_key})
    assert shown.exit_code == 0, shown.output
    lines = [line.split() for line in shown.stdout.splitlines()]
    assert ["tenant", "cli"] in lines and ["tenant", "id", str(tenant.pk)] in lines
    assert ["member", "member@cli.test"] in lines and ["role", "member"] in lines
    assert ["key", member_key.split("_")[1], "(member)"] in lines
    me = ok_json(hango("whoami", "--json", env={"HANGO_API_KEY": member_key}))
    assert me["tenant"] == {"id": str(tenant.pk), "name": "cli"} and me["role"] == "member"
    assert ok_json(hango("--json", "whoami"))["role"] == "owner"  # the other key's member
    refused = hango("whoami", env={"HANGO_API_KEY": "hk_not_a_real_key"})
    assert refused.exit_code == 1 and refused.stderr.startswith("error 401 ")


def test_wrong_key_is_401(hango):
    result = hango("--key", "hk_not_a_real_key", "agents", "list")
    assert result.exit_code == 1
    assert result.stderr.startswith("error 401 authentication_failed: ")


def test_no_server_is_exit_2():
    port = free_port()
    result = CliRunner().invoke(
        cli, ["agents", "list"],
        env={"HANGO_API_URL": f"http://127.0.0.1:{port}", "HANGO_API_KEY": "hk_x"},
    )
    assert result.exit_code == 2
    assert "cannot connect" in result.stderr and f"127.0.0.1:{port}" in result.stderr


def test_unhealthy_server_is_exit_1(hango, hango_settings):
    # The live server reads hango_settings per request; its broker is now a port nobody listens on.
    hango_settings(broker_url=f"redis://127.0.0.1:{free_port()}/0")
    result = hango("health")
    assert result.exit_code == 1
    assert "broker    unreachable" in result.stdout
    as_json = hango("--json", "health")
    assert as_json.exit_code == 1
    assert json.loads(as_json.stdout)["status"] == "unavailable"


@pytest.mark.slow
def test_installed_script_reports_health(live_server, transactional_db):
    script = Path(sys.executable).with_name("hango")
    assert script.exists(), f"{script} is missing: run `make install` (pip install -e .)"
    env = {k: v for k, v in os.environ.items() if k != "HANGO_API_KEY"}
    env["HANGO_API_URL"] = live_server.url
    result = subprocess.run(
        [str(script), "health"], env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, (result.stdout, result.stderr)
    assert "database  ok" in result.stdout
