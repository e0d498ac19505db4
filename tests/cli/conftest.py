"""Fixtures of the ``hango`` command's tests: a key on a real server (pytest-django's
live_server on PostgreSQL) and the command run against it."""

from __future__ import annotations

import pytest
from click.testing import CliRunner, Result

from accounts.services import tenant_bootstrap
from cli.main import cli


@pytest.fixture
def key(transactional_db) -> str:
    # The live server answers from another thread, so the rows must be committed: transactional_db.
    return tenant_bootstrap(tenant_name="cli", email="owner@cli.test").plaintext


@pytest.fixture
def hango(live_server, key):
    """Run ``hango ARGS`` against the live server with ``key``; env entries set to None unset."""
    runner = CliRunner()
    base_env = {"HANGO_API_URL": live_server.url, "HANGO_API_KEY": key, "COLUMNS": "200"}

    def run(*args: str, env: dict[str, str | None] | None = None) -> Result:
        return runner.invoke(cli, list(args), env={**base_env, **(env or {})},
                             catch_exceptions=False)

    return run

