"""A replay server for provider tests: canned wire payloads out, every request recorded.

The adapters talk to it through the real SDKs over real HTTP on 127.0.0.1, so what is asserted
is what would have gone over the wire. Canned payloads live in tests/harness/providers/wire/, in
each API's documented format.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

# Beside the provider tests that replay them.
WIRE = Path(__file__).resolve().parents[1] / "harness" / "providers" / "wire"

# Retry delays the SDKs honour; keeps the retry tests fast without touching SDK internals.
FAST_RETRY = {"retry-after-ms": "1"}


def wire(name: str) -> bytes:
    """A canned payload from ``wire/``."""
    return (WIRE / name).read_bytes()


def wire_json(name: str) -> Any:
    return json.loads(wire(name))


@dataclass(frozen=True)
class Recorded:
    method: str
    path: str
    headers: dict[str, str]  # names lower-cased
    body: Any  # decoded JSON, or None for an empty body


@dataclass(frozen=True)
class Canned:
    status: int
    headers: dict[str, str]
    body: bytes
    pace: float = 0.0  # seconds between two of an event stream's events (0: all at once)
    hold_after: int | None = None  # events written before the stream waits for release()


class ReplayServer:
    """Answers each request with the next canned response, in order, and records it.

    ``validate``, when given, sees each request first and may answer it instead (a server's
    refusal of a body its request model does not accept: tests/support/wire_models.py)."""

    def __init__(self, validate: Callable[[Recorded], Canned | None] | None = None) -> None:
        self.requests: list[Recorded] = []
        self.validate = validate
        # Set when the client went away while a paced stream was still being written.
        self.client_left = threading.Event()
        # A held stream (reply_sse's hold_after): set once it waits, and what lets it go on.
        self.holding = threading.Event()
        self._released = threading.Event()
        self.events_sent = 0  # events of paced or held streams written so far
        self._canned: deque[Canned] = deque()
        self._standing: dict[str, Canned] = {}  # by path prefix: answered every time
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._httpd.serve_forever,
                                        kwargs={"poll_interval": 0.01}, daemon=True)
        self._thread.start()

    def reply(self, status: int = 200, body: Any = b"", *,
              headers: dict[str, str] | None = None) -> None:
        """Queue a response; a dict or list body is sent as JSON."""
        headers = dict(headers or {})
        if not isinstance(body, bytes):
            body = json.dumps(body).encode()
            headers.setdefault("content-type", "application/json")
        self._canned.append(Canned(status, headers, body))

    def reply_sse(self, body: bytes, *, headers: dict[str, str] | None = None,
                  pace: float = 0.0, hold_after: int | None = None) -> None:
        """Queue a server-sent-events stream (a ``wire/*.sse`` file), its events ``pace``
        seconds apart (a model writing), or all at once. With ``hold_after``, the stream
        stops after that many events, sets :attr:`holding` and writes the rest only once
        :meth:`release` is called: a model that never answers until the test says so, so a
        test can prove a reader was stopped without timing it."""
        self.reply(200, body, headers={"content-type": "text/event-stream", **(headers or {})})
        self._canned[-1] = Canned(**{**self._canned[-1].__dict__, "pace": pace,
                                     "hold_after": hold_after})

    def release(self) -> None:
        """Let a held stream write the rest of its events."""
        self._released.set()

    def always(self, path: str, body: Any, status: int = 200) -> None:
        """Answer every request whose path starts with ``path`` with ``body`` (JSON), outside
        the queue of canned responses: an endpoint called a number of times the test does not
        fix, like a token counter."""
        self._standing[path] = Canned(status, {"content-type": "application/json"},
                                      json.dumps(body).encode())

    def reset(self) -> None:
        """As new: nothing recorded, queued or standing, no validator (a server shared by a
        module's tests, each starting from scratch)."""
        with self._lock:
            self.requests.clear()
            self._canned.clear()
            self._standing.clear()
            self.validate = None
            self.client_left.clear()

    def requests_to(self, path: str) -> list[Recorded]:
        return [r for r in self.requests if r.path.startswith(path)]

    @property
    def bodies(self) -> list[Any]:
        return [r.body for r in self.requests]

    def close(self) -> None:
        self.release()  # a stream still held ends rather than outliving the test
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def _answer(self, request: Recorded) -> Canned:
        with self._lock:
            self.requests.append(request)
            standing = next((c for p, c in self._standing.items()
                             if request.path.startswith(p)), None)
            if standing is not None:
                return standing
            refused = self.validate(request) if self.validate is not None else None
            if refused is not None:
                return refused
            if self._canned:
                return self._canned.popleft()
        # Told not to retry, so a test that forgot a response fails at once and says why.
        return Canned(500, {"content-type": "application/json", "x-should-retry": "false"},
                      b'{"error": {"message": "replay server: no canned response left"}}')

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                self._serve()

            def do_GET(self) -> None:  # noqa: N802
                self._serve()

            def _serve(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                canned = server._answer(Recorded(
                    method=self.command,
                    path=self.path,
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=json.loads(raw) if raw else None,
                ))
                self.send_response(canned.status)
                for name, value in canned.headers.items():
                    self.send_header(name, value)
                self.send_header("content-length", str(len(canned.body)))
                self.end_headers()
                if not canned.pace and canned.hold_after is None:
                    self.wfile.write(canned.body)
                    return
                *events, rest = canned.body.split(b"\n\n")
                try:
                    for number, event in enumerate(events):
                        if number == canned.hold_after:
                            server.holding.set()
                            server._released.wait()
                        self.wfile.write(event + b"\n\n")
                        self.wfile.flush()
                        server.events_sent += 1
                        time.sleep(canned.pace)
                    self.wfile.write(rest)
                except OSError:  # the client closed the stream (an aborted call)
                    server.client_left.set()

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass  # keep test output clean

        return Handler
