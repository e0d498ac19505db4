"""Fixtures of the scenario tests: real objects for every route, a real browser, the Context
panel's server and pages, and a worker shared by a module's MCP runs."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import redis
from django.db import connection
from playwright.sync_api import Page

from hango_project.celery import app as celery_app
from harness.providers.scripted import ScriptedModel
from runs.models import Run
from tests.support import workers
from tests.support.approvals import ALL
from tests.support.broker import broker_url, celery_broker
from tests.support.browser import chromium
from tests.support.mcp_runs import STDIO_SERVERS, SharedWorker, add_server, set_credential
from tests.support.panel import HEIGHT
from tests.support.replay import ReplayServer
from tests.support.servers import GunicornProcess
from tests.support.workers import create_database, drop_database


@pytest.fixture
def route_ids(alice, admin, queued_run: Run) -> dict[str, str]:
    """Real objects of ``alice``'s for every path parameter of the API: an agent (with a memory
    file), a session with a queued run, and a skill; an MCP server of her tenant (an admin's)
    and a credential of her own."""
    agent_id = str(queued_run.agent_id)
    memory = alice.client.post(f"/v1/agents/{agent_id}/memory",
                               {"path": "/memories/notes.md", "content": "x"}, format="json")
    assert memory.status_code == 201, memory.content
    skill = alice.client.post("/v1/skills", {"name": "walker", "description": "d"},
                              format="json")
    assert skill.status_code == 201, skill.content
    webhook = alice.client.post("/v1/webhooks", {"url": "https://hooks.example.com/x"},
                                format="json")
    assert webhook.status_code == 201, webhook.content
    schedule = alice.client.post("/v1/schedules", {"name": "n", "agent": agent_id,
                                                   "cron": "0 9 * * *", "content": "hi"},
                                 format="json")
    assert schedule.status_code == 201, schedule.content
    server = admin.client.post("/v1/mcp-servers", {"name": "walker", "transport": "sse",
                                                   "url": "https://mcp.example.invalid/sse"},
                               format="json")
    assert server.status_code == 201, server.content
    credential = alice.client.put("/v1/credentials/walker-token?scope=member", {"value": "x"},
                                  format="json")
    assert credential.status_code == 201, credential.content
    suite, case, eval_run = eval_objects(alice, agent_id)
    return {"suite_id": suite, "case_id": case, "eval_run_id": eval_run, "other_id": eval_run,
            "agent_id": agent_id, "session_id": str(queued_run.session_id),
            "run_id": str(queued_run.pk), "skill_id": skill.json()["id"],
            "path": "memories/notes.md", "webhook_id": webhook.json()["id"],
            "delivery_id": str(uuid.uuid4()), "schedule_id": schedule.json()["id"],
            "model": "scripted:demo", "mcp_server_id": server.json()["id"],
            "name": "walker-token", "number": "1", "other": "1"}


def eval_objects(caller, agent_id: str) -> tuple[str, str, str]:
    """An eval suite of ``caller``'s with one case, and an eval run of it."""
    suite = caller.client.post("/v1/eval-suites", {"name": "walker"}, format="json")
    assert suite.status_code == 201, suite.content
    case = caller.client.post(f"/v1/eval-suites/{suite.json()['id']}/cases",
                              {"name": "walk", "turns": ["hi"]}, format="json")
    assert case.status_code == 201, case.content
    eval_run = caller.client.post("/v1/eval-runs", {"suite": suite.json()["id"],
                                                    "agent": agent_id}, format="json")
    assert eval_run.status_code == 201, eval_run.content
    return suite.json()["id"], case.json()["id"], eval_run.json()["id"]


@pytest.fixture(scope="module")
def browser():
    """A headless real Chromium, shared by a module's tests (each opens its own context)."""
    with chromium() as launched:
        yield launched


@pytest.fixture
def hitl_session(alice, make_agent, make_session):
    """A session of an agent that asks before every word count, allowing every decision."""
    agent = make_agent(alice, config={"interrupt_on": {"word_count": ALL}})
    return make_session(alice, agent_id=agent["id"])


@pytest.fixture
def model(serve_model) -> ScriptedModel:
    """The provider every run of the test resolves (in this process): one script, every request
    it receives recorded."""
    scripted = ScriptedModel()
    serve_model("scripted", scripted)
    return scripted


@pytest.fixture
def empty_database(transactional_db) -> Iterator[str]:
    """A database of the test's own beside the test database, empty (never migrated), dropped
    after the test: its URL."""
    name = f"{connection.settings_dict['NAME']}_empty"
    yield create_database(name)
    drop_database(name)


# -- the Context panel's tests: hango under gunicorn, its model a local server, a page -------
# One gunicorn and one model server for a module's tests: each test has its own database rows
# (``transactional_db``), its own browser context and log-in, and the model server as new.

def _model_env(server: ReplayServer) -> dict[str, str]:
    return {"OPENAI_API_KEY": "test-key", "OPENAI_BASE_URL": server.url,
            "HANGO_PROVIDER_MAX_RETRIES": "0"}


@pytest.fixture(scope="module")
def shared_model_server() -> Iterator[ReplayServer]:
    server = ReplayServer()
    yield server
    server.close()


@pytest.fixture
def model_server(shared_model_server) -> ReplayServer:
    """The module's model server, nothing queued or recorded yet."""
    shared_model_server.reset()
    return shared_model_server


@pytest.fixture
def model_env(model_server) -> dict[str, str]:
    """The agent's model, openai:gpt-4o, is the local server, for the web and the worker."""
    return _model_env(model_server)


@pytest.fixture(scope="module")
def shared_web(tmp_path_factory, django_db_setup, shared_model_server) -> Iterator[GunicornProcess]:
    server = GunicornProcess(tmp_path_factory.mktemp("web"),
                             database_url=workers.test_database_url(),
                             env=_model_env(shared_model_server))
    yield server
    server.stop()


@pytest.fixture
def web(shared_web, transactional_db, model_server) -> GunicornProcess:
    """The module's gunicorn on the test database, its model the module's server (as new)."""
    assert shared_web.proc.poll() is None, f"gunicorn exited:\n{shared_web.log()}"
    return shared_web


@pytest.fixture
def page(request, browser, web) -> Page:
    """A page 1440 px wide, or as wide as the test's parameter says."""
    width = getattr(request, "param", 1440)
    context = browser.new_context(viewport={"width": width, "height": HEIGHT})
    yield context.new_page()
    context.close()


# -- one plain worker for a module ---------------------------------------------------------------

@pytest.fixture(scope="module")
def module_worker_process(tmp_path_factory, django_db_setup) -> Iterator[workers.WorkerProcess]:
    """One worker as ``start_worker()`` starts it, for every test of a module whose tests all
    want that one (a worker takes seconds of CPU to boot); on the suite's Redis, emptied once
    before it starts. A module that also starts workers of its own must not use it: this one
    would take their runs."""
    url = broker_url()
    redis.Redis.from_url(url).flushdb()
    worker = workers.WorkerProcess("shared", url, tmp_path_factory.mktemp("worker"), env={})
    yield worker
    worker.discard()


@pytest.fixture
def module_worker(module_worker_process, transactional_db, hango_settings) -> Iterator[str]:
    """The module's worker executes the test's runs: this process's Celery app on its broker,
    whose URL it yields."""
    url = broker_url()
    hango_settings(run_inline=False, broker_url=url)
    with celery_broker(celery_app, url):
        yield url


# -- MCP runs on a real worker --------------------------------------------------------------------

@pytest.fixture(scope="module")
def shared_mcp_worker(tmp_path_factory, django_db_setup) -> Iterator[SharedWorker]:
    """One gevent worker for the module's tests, on the suite's Redis (emptied first) and the
    test database, configured for MCP servers (tests/support/mcp_runs.py)."""
    url = broker_url()
    redis.Redis.from_url(url).flushdb()
    shared = SharedWorker(tmp_path_factory.mktemp("mcp-worker"), url)
    yield shared
    shared.stop()


@pytest.fixture
def mcp_worker(shared_mcp_worker, transactional_db, hango_settings) -> Iterator[SharedWorker]:
    """The module's worker executes the test's runs; the API checks servers against the
    worker's MCP settings."""
    hango_settings(run_inline=False, broker_url=shared_mcp_worker.broker,
                   mcp_allow_private=True, mcp_stdio_servers=STDIO_SERVERS)
    with celery_broker(celery_app, shared_mcp_worker.broker):
        yield shared_mcp_worker


@pytest.fixture
def shop(mcp_worker, admin, mcp_server) -> dict:
    """The tenant's MCP server `shop` for runs on the module's worker: the test server, its
    token the tenant's credential."""
    set_credential(admin, "shop-token")
    return add_server(admin, "shop", mcp_server)
