"""A webhook receiver on 127.0.0.1 for tests: it keeps every request it gets (headers, body)
and answers each with the next status of its script (then 200)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from tests.support.loopback import QuietHandler, loopback_server


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    url: str
    answers: list[int] = field(default_factory=list)  # the statuses to answer, in order
    got: list[Received] = field(default_factory=list)

    def wait_for(self, count: int, timeout: float = 20) -> list[Received]:
        deadline = time.monotonic() + timeout
        while len(self.got) < count:
            assert time.monotonic() < deadline, f"{len(self.got)} of {count} requests came"
            time.sleep(0.02)
        return self.got


@contextmanager
def receiver() -> Iterator[Receiver]:
    state = Receiver(url="")

    class Handler(QuietHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            body = self.rfile.read(int(self.headers.get("content-length", 0)))
            state.got.append(Received(self.path, {k.lower(): v for k, v in self.headers.items()},
                                      body))
            status = state.answers.pop(0) if state.answers else 200
            self.send_response(status)
            self.send_header("content-length", "0")
            self.end_headers()

    with loopback_server(Handler) as url:
        state.url = f"{url}/hooks/hango?token=t0k3n"
        yield state
