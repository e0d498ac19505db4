"""hango_project.middleware: a body's size is checked before anything reads it, from its
Content-Length or, for a chunked body the server has de-chunked, by reading at most one byte past
the cap; a chunked body the server cannot de-chunk is a 411."""

from __future__ import annotations

import io
import json

import pytest
from django.db import connection

from agents.models import Agent
from tests.support.api import AGENT_BODY, error_of
from tests.support.servers import free_port


def post_chunked(caller, raw: bytes, *, terminated: bool, url: str = "/v1/agents"):
    """POST ``raw`` as a server hands a chunked request to the app: no Content-Length, the
    Transfer-Encoding header, and (gunicorn) ``wsgi.input_terminated`` with the body de-chunked."""
    extra = {"CONTENT_LENGTH": "", "HTTP_TRANSFER_ENCODING": "chunked",
             "wsgi.input": io.BytesIO(raw)}
    if terminated:
        extra["wsgi.input_terminated"] = True
    return caller.client.generic("POST", url, b"", content_type="application/json", **extra)


def test_a_chunked_body_the_server_terminated_is_read(alice):
    response = post_chunked(alice, json.dumps(AGENT_BODY).encode(), terminated=True)
    assert response.status_code == 201, response.content
    assert Agent.objects.get(pk=response.json()["id"]).name == AGENT_BODY["name"]


def test_a_chunked_body_is_held_to_the_size_limit(alice, hango_settings):
    raw = json.dumps(AGENT_BODY).encode()
    hango_settings(max_body_bytes=len(raw))
    assert post_chunked(alice, raw, terminated=True).status_code == 201
    hango_settings(max_body_bytes=len(raw) - 1)
    error = error_of(post_chunked(alice, raw, terminated=True), 413, "payload_too_large")
    assert error["detail"] == {"limit_bytes": len(raw) - 1, "transfer_encoding": "chunked"}


def test_a_chunked_body_the_server_did_not_terminate_is_411(alice):
    error = error_of(post_chunked(alice, json.dumps(AGENT_BODY).encode(), terminated=False), 411,
                     "length_required")
    assert "Content-Length" in error["message"]
    assert not Agent.objects.exists()


@pytest.mark.parametrize("encoding", ["chunked", "gzip, chunked", "Chunked"])
def test_any_chunked_transfer_coding_counts(alice, encoding):
    response = alice.client.generic("POST", "/v1/agents", b"", content_type="application/json",
                                    CONTENT_LENGTH="", HTTP_TRANSFER_ENCODING=encoding,
                                    **{"wsgi.input": io.BytesIO(b"{}")})
    error_of(response, 411, "length_required")


@pytest.fixture
def database_down(alice):
    """This process's connection points at a port nothing listens on, as while PostgreSQL
    restarts; put back afterwards."""
    saved = connection.settings_dict["PORT"]
    connection.close()
    connection.settings_dict["PORT"] = free_port()
    try:
        yield
    finally:
        connection.close()
        connection.settings_dict["PORT"] = saved


@pytest.mark.django_db(transaction=True)
def test_a_request_while_the_database_is_down_is_503_not_500(alice, database_down):
    response = alice.client.get("/v1/agents")
    error_of(response, 503, "database_unavailable")
    assert response["Retry-After"] == "5"
