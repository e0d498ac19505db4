"""Fixtures of the ``hango`` command's tests: a key on a real server (pytest-django's
live_server on PostgreSQL), the command run against it, and the same server's API."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from click.testing import CliRunner, Result

from accounts.models import Role, Tenant
from accounts.services import api_key_issue, member_ensure, tenant_bootstrap
from cli.main import cli
from tests.support.replay import ReplayServer


@pytest.fixture
def key(transactional_db) -> str:
    # The live server answers from another thread, so the rows must be committed: transactional_db.
    return tenant_bootstrap(tenant_name="cli", email="owner@cli.test").plaintext


@pytest.fixture
def member_key(key) -> str:
    """A key of a plain member (role ``member``) of ``key``'s tenant: reads, writes nothing
    of the tenant's."""
    member, _ = member_ensure(tenant=Tenant.objects.get(name="cli"), email="member@cli.test",
                              role=Role.MEMBER)
    return api_key_issue(member=member, name="member").plaintext


@pytest.fixture
def hango(live_server, key):
    """Run ``hango ARGS`` against the live server with ``key``; env entries set to None unset;
    ``input``, its standard input."""
    runner = CliRunner()
    base_env = {"HANGO_API_URL": live_server.url, "HANGO_API_KEY": key, "COLUMNS": "200"}

    def run(*args: str, env: dict[str, str | None] | None = None,
            input: str | None = None) -> Result:
        return runner.invoke(cli, list(args), env={**base_env, **(env or {})}, input=input,
                             catch_exceptions=False)

    return run


@pytest.fixture
def api(live_server, key) -> Iterator[httpx.Client]:
    """The live server's own API with ``key``, to set up and check what a command did."""
    with httpx.Client(base_url=live_server.url, timeout=60,
                      headers={"Authorization": f"Bearer {key}"}) as client:
        yield client


@pytest.fixture
def replay() -> Iterator[ReplayServer]:
    """A server answering canned responses in order (tests/support/replay.py): an API whose
    streams a test writes frame by frame, live deltas included."""
    server = ReplayServer()
    yield server
    server.close()


@pytest.fixture
def demo(api, inline_runs) -> dict:
    """A session after one demo run: 1 the task, then tool calls paired with their results —
    2 → 3, 4 → 5, 6 → 7, 8 → 9 — and 10, the answer."""
    agent = api.post("/v1/agents", json={"name": "helper", "model": "scripted:demo",
                                         "system_prompt": "You help."}).json()
    session = api.post("/v1/sessions", json={"agent": agent["id"]}).json()
    posted = api.post(f"/v1/sessions/{session['id']}/messages",
                      json={"content": "count these four words"})
    assert posted.json()["run"]["status"] == "completed", posted.text
    return session
