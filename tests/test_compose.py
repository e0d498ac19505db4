"""docker-compose.yml: a valid Compose file, and the stack the Makefile and README describe.

Validation needs no Docker: the file is checked against the Compose Specification's JSON schema,
shipped in tests/data (see its README for where it came from). Where Compose v2 is installed,
``docker compose config`` checks it as well.
"""

from __future__ import annotations

import itertools
import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml
from jsonschema import Draft201909Validator, ValidationError

ROOT = Path(__file__).resolve().parents[1]
COMPOSE_FILE = ROOT / "docker-compose.yml"
SCHEMA_FILE = ROOT / "tests" / "data" / "compose-spec.json"
MAKEFILE = ROOT / "Makefile"
DOCKERFILE = ROOT / "Dockerfile"


def compose() -> dict[str, Any]:
    return yaml.safe_load(COMPOSE_FILE.read_text())


def schema_errors(document: dict[str, Any]) -> list[ValidationError]:
    # The schema declares draft 2019-09 under a URI jsonschema does not recognise, so the
    # validator is named rather than guessed from "$schema".
    schema = json.loads(SCHEMA_FILE.read_text())
    return list(Draft201909Validator(schema).iter_errors(document))


def located(error: ValidationError) -> str:
    return "/".join(map(str, error.absolute_path))


def with_value(document: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    """A copy of ``document`` with ``value`` at ``path``. Only the mappings along the path are
    copied, so a mapping that web and worker share through a YAML anchor changes in one alone."""
    head, *rest = path
    changed = dict(document)
    changed[head] = with_value(document[head], tuple(rest), value) if rest else value
    return changed


def make_recipe(target: str) -> list[list[str]]:
    """The commands of a Makefile target as argv lists, without the venv's ``$(PY) [-m]``."""
    lines = MAKEFILE.read_text().replace("\\\n", " ").splitlines()
    start = lines.index(next(line for line in lines if line.startswith(f"{target}:")))
    recipe = itertools.takewhile(lambda line: line.startswith("\t"), lines[start + 1:])
    commands = []
    for line in recipe:
        argv = shlex.split(line.strip().lstrip("@"))
        if argv[0] == "$(PY)":
            argv = argv[2:] if argv[1] == "-m" else argv[1:]
        commands.append(argv)
    return commands


def shell_steps(command: list[str]) -> list[list[str]]:
    """The ``&&``-joined steps of a ``sh -c`` command, each without ``exec`` or ``python``."""
    assert command[:2] == ["sh", "-c"], command
    steps = [shlex.split(step) for step in command[2].split("&&")]
    return [argv[1:] if argv[0] in ("exec", "python") else argv for argv in steps]


def option(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def dockerfile_env(name: str) -> str:
    found = re.search(rf"\b{name}=(\S+)", DOCKERFILE.read_text())
    assert found, f"the Dockerfile sets no {name}"
    return found.group(1)


def test_the_schema_is_the_compose_specification():
    schema = json.loads(SCHEMA_FILE.read_text())
    assert schema["title"] == "Compose Specification"
    Draft201909Validator.check_schema(schema)


def test_compose_file_is_valid():
    assert [f"{located(e)}: {e.message}" for e in schema_errors(compose())] == []


@pytest.mark.parametrize(("path", "value", "where"), [
    pytest.param(("services", "web", "comand"), ["gunicorn"], "services/web",
                 id="unknown-service-key"),
    pytest.param(("services", "worker", "depends_on", "redis", "condition"), "service_ready",
                 "services/worker/depends_on", id="bad-depends-on-condition"),
    pytest.param(("services", "web", "healthcheck", "retries"), "five",
                 "services/web/healthcheck/retries", id="healthcheck-retries-not-a-number"),
    pytest.param(("service",), {}, "", id="unknown-top-level-key"),
])
def test_a_broken_compose_file_fails_validation(path, value, where):
    errors = schema_errors(with_value(compose(), path, value))
    assert [located(e) for e in errors] == [where]


def test_stack_services():
    services = compose()["services"]
    assert {"postgres", "redis", "web", "worker"} <= set(services)

    web, worker = services["web"], services["worker"]
    for app in (web, worker):
        assert app["depends_on"]["postgres"]["condition"] == "service_healthy"
        assert app["depends_on"]["redis"]["condition"] == "service_healthy"
    # The worker must reach the same database and broker as the web process.
    for name in ("DATABASE_URL", "CELERY_BROKER_URL", "DJANGO_SECRET_KEY"):
        assert web["environment"][name] == worker["environment"][name]
    # The slim image has no curl: the healthcheck uses python.
    check = " ".join(web["healthcheck"]["test"])
    assert "urllib" in check and "/healthz" in check and "curl" not in check


def test_the_app_urls_name_the_stack_services():
    services = compose()["services"]
    env, postgres = services["web"]["environment"], services["postgres"]["environment"]
    database = urlsplit(env["DATABASE_URL"])
    assert database.hostname == "postgres" and database.path == f"/{postgres['POSTGRES_DB']}"
    assert (database.username, database.password) == (
        postgres["POSTGRES_USER"], postgres["POSTGRES_PASSWORD"])
    assert urlsplit(env["CELERY_BROKER_URL"]).hostname == "redis"


def test_web_migrates_then_serves_gunicorn_like_make_serve():
    web = compose()["services"]["web"]
    migrate, serve = shell_steps(web["command"])
    make_migrate, make_serve = make_recipe("serve")
    assert migrate == make_migrate == ["manage.py", "migrate", "--noinput"]
    assert serve[:2] == make_serve[:2] == ["gunicorn", "hango_project.wsgi"]
    assert option(serve, "--workers") == option(make_serve, "--workers")
    # Requests are greenlets: an event stream holds no worker while it waits.
    for name in ("--worker-class", "--worker-connections"):
        assert option(serve, name) == option(make_serve, name)
    assert option(serve, "--worker-class") == "gevent"
    # Inside its container gunicorn listens on every interface, on the port published and
    # probed by the healthcheck.
    host, port = option(serve, "--bind").rsplit(":", 1)
    assert host == "0.0.0.0"
    assert web["ports"] == [f"{port}:{port}"]
    assert f"http://127.0.0.1:{port}/healthz" in " ".join(web["healthcheck"]["test"])


def test_worker_runs_the_worker_group_like_make_worker_without_beat():
    from hango_project.worker_group import worker_command

    worker = compose()["services"]["worker"]["command"]
    (make_worker,) = make_recipe("worker")
    assert worker[:3] == ["python", "-m", "hango_project.worker_group"]
    assert worker[3:] == make_worker[1:] and make_worker[0] == "hango_project.worker_group"
    # Each of the group's workers is Celery on the gevent pool, named on its command line,
    # where Celery sees it before anything is imported (it monkey-patches then), never left to
    # a setting.
    celery = worker_command(1, worker[3:])
    assert celery[1:5] == ["-m", "celery", "-A", "hango_project"] and celery[5] == "worker"
    assert option(celery, "--pool") == "gevent"
    # Each worker runs the reconciler on a thread of its own; an embedded beat would only be a
    # second process that outlives a killed worker, and its tasks wait behind the run tasks.
    for command in (worker, make_worker, celery):
        assert not {"--beat", "-B"} & set(command)


def test_web_and_worker_run_one_image_built_from_this_directory():
    services = compose()["services"]
    web, worker = services["web"], services["worker"]
    assert web["build"] == worker["build"] == "."
    assert web["image"] == worker["image"]
    assert (ROOT / web["build"] / "Dockerfile").is_file()
    # PostgreSQL and Redis are stock images; nothing else is built.
    assert {name for name, service in services.items() if "build" in service} == {"web", "worker"}
    # The image's default command serves the same WSGI app as the web service.
    cmd = re.search(r"^CMD (.+)$", DOCKERFILE.read_text(), re.MULTILINE)
    assert cmd, "the Dockerfile has no CMD"
    assert json.loads(cmd.group(1))[:2] == shell_steps(web["command"])[-1][:2]


def docker_compose_version() -> subprocess.CompletedProcess[str] | None:
    if shutil.which("docker") is None:
        return None
    return subprocess.run(["docker", "compose", "version"], capture_output=True, text=True,
                          timeout=60)


@pytest.mark.slow
def test_docker_compose_config_accepts_the_file():
    probe = docker_compose_version()
    if probe is None or probe.returncode != 0:
        pytest.skip("`docker compose version` fails here (no Compose v2); "
                    "test_compose_file_is_valid checks the file against the schema instead")
    result = subprocess.run(
        ["docker", "compose", "-f", str(COMPOSE_FILE), "config", "-q"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr
