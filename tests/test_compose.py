"""docker-compose.yml is a valid Compose file for the full stack."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
COMPOSE_FILE = ROOT / "docker-compose.yml"


def compose_command() -> list[str]:
    """Compose v2 (the docker plugin) when it works, else Debian's docker-compose (v1)."""
    if shutil.which("docker"):
        probe = subprocess.run(["docker", "compose", "version"], capture_output=True, timeout=60)
        if probe.returncode == 0:
            return ["docker", "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    pytest.fail(
        "Neither `docker compose` nor `docker-compose` is installed. .ci/run installs "
        "docker-compose (apt-get install docker-compose); do the same to run this test."
    )


def test_compose_file_is_valid():
    result = subprocess.run(
        [*compose_command(), "-f", str(COMPOSE_FILE), "config", "-q"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr


def test_stack_services():
    services = yaml.safe_load(COMPOSE_FILE.read_text())["services"]
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
