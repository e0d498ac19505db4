"""Fixtures shared by the whole suite: tenants, members with keys, an API client per key,
hango's settings for one test, runs (inline, queued, or on Redis and real Celery workers), and
the in-repo MCP server as a process of its own."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import redis
from django.conf import settings as django_settings
from django.contrib.auth import get_user_model
from django.db import connection
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from rest_framework.test import APIClient

from accounts.models import Member, Role, Tenant
from hango_project.celery import app as celery_app
from hango_project.config import HangoSettings
from harness.messages import Request, Response
from harness.providers import ProviderFactory, registry
from harness.providers.base import Provider, ProviderSettings
from runs.execution.tasks import drain_local_runs
from tests.support.api import AGENT_BODY, Caller, make_caller
from tests.support.broker import RedisServer, broker_url, celery_broker
from tests.support.flush import delete_instead_of_truncate
from tests.support.mcp_servers import McpServerProcess
from tests.support.otel import span_exporter
from tests.support.workers import WorkerProcess

# The `slow` mark's check, the `database` mark and the durations report (`make test`, `make check`).
pytest_plugins = ["tests.support.tiers"]


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix: None) -> None:
    """On SQLite (the suite's second pass, ``make test``), the test database is a file beside
    the configured one, as the quickstart's is: pytest-django's default, in memory, is gone once
    a test closes its connection (a lease renewal that failed does), and no thread of a server
    could open it. Under pytest-xdist each test process has a file of its own (``_gw1``), as it
    has a PostgreSQL database of its own."""
    database = django_settings.DATABASES["default"]
    if database["ENGINE"] == "django.db.backends.sqlite3":
        name = Path(database["NAME"])
        worker = os.environ.get("PYTEST_XDIST_WORKER")
        stem = f"test_{name.stem}_{worker}" if worker else f"test_{name.stem}"
        database.setdefault("TEST", {})["NAME"] = str(name.with_name(stem + name.suffix))


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup: None) -> Iterator[None]:
    """The test database, emptied after each test that commits by ``DELETE`` rather than
    ``TRUNCATE`` (tests/support/flush.py says why)."""
    with delete_instead_of_truncate():
        yield


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test marked ``postgresql(reason=...)`` is skipped on SQLite, saying why."""
    if connection.vendor == "postgresql":
        return
    for item in items:
        if (marker := item.get_closest_marker("postgresql")) is not None:
            item.add_marker(pytest.mark.skip(
                reason=f"PostgreSQL only: {marker.kwargs['reason']}"))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    """Before any fixture's teardown (the database's flush among them): no in-process run
    that a test started is still under way in a pool thread, where it would hold locks (and a
    connection) the teardown waits for."""
    drain_local_runs()


@pytest.fixture
def hango_settings(settings) -> Callable[..., HangoSettings]:
    """Change hango's settings for this test: ``hango_settings(run_inline=True, broker_url="")``.

    Each call replaces ``settings.HANGO`` with a validated copy (field names of
    :class:`~hango_project.config.HangoSettings`; a typo or a value of the wrong type raises), and
    pytest-django puts the original back after the test."""

    def _change(**changes: Any) -> HangoSettings:
        settings.HANGO = settings.HANGO.replace(**changes)
        return settings.HANGO

    return _change


@pytest.fixture
def serve_model() -> Iterator[Callable[[str, Provider | ProviderFactory], None]]:
    """Choose who answers a run's model calls for this test:
    ``serve_model("scripted", provider)`` serves every scripted model with ``provider`` (the
    same object for every run), ``serve_model("scripted:demo", factory)`` one model with
    ``factory(name, settings)``. The process's provider registry is as before after the test.
    (Only this process: a Celery worker process resolves models its own way.)"""
    with ExitStack() as undo:

        def _serve(name: str, provider: Provider | ProviderFactory) -> None:
            factory = provider if not isinstance(provider, Provider) else (
                lambda model, settings: provider)
            undo.enter_context(registry.serving(name, factory))

        yield _serve


@pytest.fixture
def staff_client(client, db):
    """A Django test client logged in as a superuser (the admin's pages). Logged in without a
    password: hashing one costs a quarter of a second of CPU, in each of some 150 tests."""
    user = get_user_model().objects.create_superuser("root@example.com", "root@example.com", None)
    client.force_login(user)
    return client


@pytest.fixture
def staff_member(staff_client, tenant) -> Member:
    """The staff user of ``staff_client`` as an owner of ``tenant``: the member the admin's
    writes in that tenant are audited as."""
    user = get_user_model().objects.get(username="root@example.com")
    return Member.objects.create(tenant=tenant, user=user, role=Role.OWNER)


@pytest.fixture
def spans() -> InMemorySpanExporter:
    """The in-memory exporter, emptied before the test; read it with ``get_finished_spans()``."""
    exporter = span_exporter()
    exporter.clear()
    return exporter


@pytest.fixture
def mcp_server(tmp_path) -> Iterator[McpServerProcess]:
    """The in-repo MCP server (tests/support/mcp_server.py) on a free loopback port, requiring
    its bearer token (``mcp_server.target()`` carries it); stopped after the test."""
    server = McpServerProcess(tmp_path)
    yield server
    server.stop()


@pytest.fixture
def tenant(db) -> Tenant:
    return Tenant.objects.create(name="acme")


@pytest.fixture
def other_tenant(db) -> Tenant:
    return Tenant.objects.create(name="globex")


@pytest.fixture
def owner(tenant) -> Caller:
    return make_caller(tenant, "owner@acme.test", Role.OWNER)


@pytest.fixture
def admin(tenant) -> Caller:
    return make_caller(tenant, "admin@acme.test", Role.ADMIN)


@pytest.fixture
def alice(tenant) -> Caller:
    """A plain member of ``tenant``."""
    return make_caller(tenant, "alice@acme.test", Role.MEMBER)


@pytest.fixture
def bob(tenant) -> Caller:
    """Another plain member of ``tenant``."""
    return make_caller(tenant, "bob@acme.test", Role.MEMBER)


@pytest.fixture
def outsider(other_tenant) -> Caller:
    """The owner of another tenant."""
    return make_caller(other_tenant, "owner@globex.test", Role.OWNER)


@pytest.fixture
def anon() -> APIClient:
    return APIClient()


@pytest.fixture
def make_agent():
    """Create an agent through the API as ``caller``; returns the response body."""

    def _make(caller: Caller, **overrides) -> dict:
        response = caller.client.post("/v1/agents", {**AGENT_BODY, **overrides}, format="json")
        assert response.status_code == 201, response.content
        return response.json()

    return _make


@pytest.fixture
def make_session(make_agent):
    """Create a session (and an agent unless given) through the API as ``caller``."""

    def _make(caller: Caller, agent_id: str | None = None, title: str = "t") -> dict:
        agent_id = agent_id or make_agent(caller)["id"]
        response = caller.client.post(
            "/v1/sessions", {"agent": agent_id, "title": title}, format="json"
        )
        assert response.status_code == 201, response.content
        return response.json()

    return _make


# -- runs ---------------------------------------------------------------------------------------


@pytest.fixture
def inline_runs(hango_settings, transactional_db):
    """Runs execute synchronously when their transaction commits (no worker needed); the test
    database really commits, so commit hooks fire."""
    hango_settings(run_inline=True, broker_url="")


@pytest.fixture
def queued_run(alice, make_session, hango_settings):
    """A run whose task nobody executes (no broker, not inline): the test drives it by hand."""
    from runs.intake.services import message_post
    from runs.models import Session

    hango_settings(run_inline=False, broker_url="")
    session = make_session(alice)
    _, run = message_post(session=Session.objects.get(pk=session["id"]), content="hi")
    return run


@dataclass
class Recording:
    """A run's provider, keeping every request it receives (the summarizer's included)."""

    inner: Provider | None = None
    requests: list[Request] = field(default_factory=list)

    @property
    def name(self) -> str:
        assert self.inner is not None
        return self.inner.name

    def complete(self, request: Request) -> Response:
        assert self.inner is not None
        self.requests.append(request)
        return self.inner.complete(request)

    def runs(self) -> list[Request]:
        return [r for r in self.requests if r.metadata.get("purpose") != "summarize"]

    def summaries(self) -> list[Request]:
        return [r for r in self.requests if r.metadata.get("purpose") == "summarize"]


@pytest.fixture
def provider(serve_model) -> Recording:
    """Every scripted provider a run of this process builds records its requests here."""
    recording = Recording()
    builtin = registry.factory("scripted")
    assert builtin is not None

    def recorded(name: str, settings: ProviderSettings) -> Recording:
        recording.inner = builtin(name, settings)
        return recording

    serve_model("scripted", recorded)
    return recording


@pytest.fixture
def broker(hango_settings):
    """Point this process's Celery app at the suite's Redis database, emptied first."""
    url = broker_url()
    redis.Redis.from_url(url).flushdb()
    hango_settings(run_inline=False, broker_url=url)
    with celery_broker(celery_app, url):
        yield url


@pytest.fixture
def redis_server(tmp_path) -> Iterator[RedisServer]:
    """A Redis of this test's own, down until the test starts it (and stopped after the test):
    for a broker that goes away and comes back without touching the suite's shared one."""
    server = RedisServer(tmp_path)
    yield server
    server.stop()


@pytest.fixture
def private_broker(redis_server, hango_settings) -> Iterator[RedisServer]:
    """This process's Celery app pointed at :func:`redis_server`, which is down until the test
    starts it."""
    hango_settings(run_inline=False, broker_url=redis_server.url)
    with celery_broker(celery_app, redis_server.url):
        yield redis_server


@pytest.fixture
def worker_processes(tmp_path, transactional_db):
    """Start real worker processes on a given broker; every one is killed at the end of the
    test (``WorkerProcess.discard``). :func:`start_worker` starts them on the suite's Redis."""
    started: list[WorkerProcess] = []

    def _start(name: str, broker: str, *, pool: str = "gevent", ready: bool = True,
               args: tuple[str, ...] = (), **env: str) -> WorkerProcess:
        worker = WorkerProcess(name, broker, tmp_path, env={k: str(v) for k, v in env.items()},
                               pool=pool, ready=ready, args=args)
        started.append(worker)
        return worker

    yield _start
    for worker in started:
        worker.discard()


@pytest.fixture
def start_worker(broker, worker_processes):
    """Start real worker processes on the suite's Redis (``start_worker("w2", HANGO_…=1)``);
    each is ready when it returns, unless ``ready=False``."""

    def _start(name: str = "w1", *, pool: str = "gevent", ready: bool = True,
               args: tuple[str, ...] = (), **env: str) -> WorkerProcess:
        return worker_processes(name, broker, pool=pool, ready=ready, args=args, **env)

    return _start
