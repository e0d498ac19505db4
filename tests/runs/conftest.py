"""Fixtures for run execution: an agent + session, inline runs, real Celery workers."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
import redis

from hango_project.celery import app as celery_app
from harness.messages import Request, Response
from harness.providers import registry
from harness.providers.base import Provider, ProviderSettings
from tests.support.broker import broker_url
from tests.support.workers import WorkerProcess


@pytest.fixture
def inline_runs(hango_settings, transactional_db):
    """Runs execute synchronously when their transaction commits (no worker needed); the test
    database really commits, so commit hooks fire."""
    hango_settings(run_inline=True, broker_url="")


@pytest.fixture
def queued_run(alice, make_session, hango_settings):
    """A run whose task nobody executes (no broker, not inline): the test drives it by hand."""
    from runs.models import Session
    from runs.services import message_post

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
    previous = {"broker_url": celery_app.conf.broker_url,
                "task_always_eager": celery_app.conf.task_always_eager}
    # Nothing in this process has opened a broker connection yet (eager mode opens none), so
    # the producer pool is created on first use, with this URL.
    celery_app.conf.update(broker_url=url, task_always_eager=False)
    yield url
    celery_app.conf.update(**previous)


@pytest.fixture
def start_worker(broker, tmp_path, transactional_db):
    """Start real worker processes; every one is stopped at the end of the test."""
    started: list[WorkerProcess] = []

    def _start(name: str = "w1", *, beat: bool = False, **env: str) -> WorkerProcess:
        worker = WorkerProcess(name, broker, tmp_path, env={k: str(v) for k, v in env.items()},
                               beat=beat)
        started.append(worker)
        return worker

    yield _start
    for worker in started:
        worker.stop()
