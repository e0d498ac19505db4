"""Fixtures for the provider tests: a replay server (tests/support/replay.py) per test, a URL
nothing listens on, and none of the developer's provider keys or endpoints."""

from __future__ import annotations

import socket

import pytest

from tests.support.replay import ReplayServer


@pytest.fixture
def server():
    replay = ReplayServer()
    yield replay
    replay.close()


@pytest.fixture
def closed_port_url() -> str:
    """A URL nothing listens on (a port just bound and released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@pytest.fixture(autouse=True)
def _no_provider_env(monkeypatch):
    """The developer's own keys and endpoints must not leak into these tests."""
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL",
                 "ANTHROPIC_PROFILE", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
