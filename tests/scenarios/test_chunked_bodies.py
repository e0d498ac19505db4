"""A chunked request body, sent byte for byte to hango under real gunicorn (the production
server, which de-chunks it): read like any other body, held to the same size limit."""

from __future__ import annotations

import json

import pytest

from agents.models import Agent
from tests.support import workers
from tests.support.api import AGENT_BODY
from tests.support.servers import GunicornProcess, chunked, raw_request

pytestmark = pytest.mark.slow

LIMIT = 4096


@pytest.fixture
def gunicorn(transactional_db, tmp_path):
    server = GunicornProcess(tmp_path, database_url=workers.test_database_url(),
                             env={"HANGO_MAX_BODY_BYTES": str(LIMIT)})
    yield server
    server.stop()


def post(server: GunicornProcess, key: str, body: bytes, *, chunk: int = 16):
    head = (f"POST /v1/agents HTTP/1.1\nHost: 127.0.0.1:{server.port}\n"
            f"Authorization: Bearer {key}\nContent-Type: application/json\n"
            "Transfer-Encoding: chunked\nConnection: close")
    return raw_request(server.port, head, chunked(body, chunk))


def test_a_chunked_body_is_read_under_gunicorn(alice, gunicorn):
    body = json.dumps({**AGENT_BODY, "name": "chunked"}).encode()
    status, answer = post(gunicorn, alice.key, body)
    assert status == 201, (answer, gunicorn.log())
    assert Agent.objects.get(pk=answer["id"]).name == "chunked"


def test_a_chunked_body_past_the_limit_is_413_under_gunicorn(alice, gunicorn):
    at_limit = json.dumps({**AGENT_BODY, "description": ""}).encode()
    at_limit = at_limit.replace(b'"description": ""',
                                b'"description": "' + b"x" * (LIMIT - len(at_limit)) + b'"')
    assert len(at_limit) == LIMIT
    status, answer = post(gunicorn, alice.key, at_limit, chunk=1000)
    assert status == 201, answer
    status, answer = post(gunicorn, alice.key, at_limit + b" ", chunk=1000)
    assert status == 413, answer
    assert answer["error"]["code"] == "payload_too_large"
    assert Agent.objects.count() == 1
