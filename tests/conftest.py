"""Fixtures shared by the whole suite: tenants, members with keys, an API client per key, and
hango's settings for one test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from rest_framework.test import APIClient

from accounts.models import Role, Tenant
from hango_project.config import HangoSettings
from harness.providers import ProviderFactory, registry
from harness.providers.base import Provider
from tests.support.api import AGENT_BODY, Caller, make_caller
from tests.support.otel import span_exporter


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
def spans() -> InMemorySpanExporter:
    """The in-memory exporter, emptied before the test; read it with ``get_finished_spans()``."""
    exporter = span_exporter()
    exporter.clear()
    return exporter


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
