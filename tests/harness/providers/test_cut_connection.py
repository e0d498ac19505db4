"""A server that dies mid-answer, as llama-cpp-python's (uvicorn) does when it is killed: its
event stream, sent with chunked transfer encoding, stops in the middle of the body without the
last chunk. The SDK wraps that read error in its connection error; the adapter must still say
the stream was cut and how far the answer had come, never "no response"."""

from __future__ import annotations

import json
import socket
import threading

import pytest

from harness.errors import ProviderUnavailable
from harness.messages import Message, Request
from harness.providers.base import ProviderSettings, TextDelta
from harness.providers.openai_compat import OpenAICompatProvider

REQUEST = Request(model="gemma-3-270m", messages=(Message.user("Tell a long story."),),
                  max_tokens=64)


def _chunk(delta: dict) -> bytes:
    """One ``chat.completion.chunk`` event as one HTTP chunk, as uvicorn frames it."""
    event = ("data: " + json.dumps({
        "id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
        "model": "gemma-3-270m",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": None}],
    }) + "\n\n").encode()
    return f"{len(event):x}\r\n".encode() + event + b"\r\n"


class DyingServer:
    """Answers one request with the head of a chunked event stream, then closes the socket."""

    def __init__(self, events: list[bytes]) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}/v1"
        self._events = events
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        conn, _ = self._listener.accept()
        with conn:
            head = b""
            while b"\r\n\r\n" not in head:
                head += conn.recv(65536)
            length = int(next((line.split(b":")[1] for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), b"0"))
            body = head.split(b"\r\n\r\n", 1)[1]
            while len(body) < length:
                body += conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                         b"transfer-encoding: chunked\r\n\r\n" + b"".join(self._events))

    def close(self) -> None:
        self._thread.join(timeout=5)
        self._listener.close()


@pytest.fixture
def dying():
    servers: list[DyingServer] = []

    def make(events: list[bytes]) -> DyingServer:
        servers.append(DyingServer(events))
        return servers[-1]

    yield make
    for server in servers:
        server.close()


def test_a_stream_whose_server_died_mid_answer_says_it_was_cut(dying):
    server = dying([_chunk({"role": "assistant"}), _chunk({"content": "Once"}),
                    _chunk({"content": " upon"})])
    provider = OpenAICompatProvider(settings=ProviderSettings(
        openai_base_url=server.url, max_retries=0, timeout_seconds=10.0))

    deltas = []
    with pytest.raises(ProviderUnavailable) as caught:
        deltas.extend(provider.stream(REQUEST))

    assert [d.text for d in deltas if isinstance(d, TextDelta)] == ["Once", " upon"]
    message = str(caught.value)
    assert message.startswith("OpenAI API error (stream cut): the connection was lost after "
                              "2 deltas of the answer")
    assert "no response" not in message and "\n" not in message
    assert caught.value.retryable


def test_a_server_that_died_before_the_answer_says_so(dying):
    server = dying([_chunk({"role": "assistant"})])
    provider = OpenAICompatProvider(settings=ProviderSettings(
        openai_base_url=server.url, max_retries=0, timeout_seconds=10.0))

    with pytest.raises(ProviderUnavailable) as caught:
        list(provider.stream(REQUEST))

    assert "(stream cut): the connection was lost after 1 chunks, before any of the answer" in (
        str(caught.value))
