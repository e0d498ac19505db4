"""A polled wait (hango_client/_waits.py), as ``client.evals.runs.wait`` declares it: the
object read again until it is done, a pause of ``interval`` between reads, never past the
deadline; spent, the error of the last read. tests/scenarios/test_sdk_evals.py waits on real
eval runs."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import pytest
from hango_client import AsyncClient, Client, EvalRunTimedOut, HangoError
from hango_client._waits import Poll


def eval_run(status: str) -> dict[str, Any]:
    return {"id": "e1", "status": status, "summary": {"running": 2}, "results": []}


class Statuses:
    """``GET /v1/eval-runs/e1`` answering each status in turn, the last one from then on."""

    def __init__(self, *statuses: str) -> None:
        self.statuses, self.reads = list(statuses), 0

    def __call__(self, request: httpx.Request) -> httpx.Response:
        assert request.method == "GET" and request.url.path == "/v1/eval-runs/e1"
        self.reads += 1
        status = self.statuses.pop(0) if len(self.statuses) > 1 else self.statuses[0]
        return httpx.Response(200, json=eval_run(status))


def test_wait_reads_until_done_pausing_the_interval(monkeypatch):
    api = Statuses("running", "running", "completed")
    pauses: list[float] = []
    monkeypatch.setattr("hango_client._sync.time.sleep", pauses.append)
    client = Client("http://api.test", "k", transport=httpx.MockTransport(api))
    assert client.evals.runs.wait({"id": "e1"}, interval=2.5)["status"] == "completed"
    assert api.reads == 3 and pauses == [2.5, 2.5]


def test_async_wait_the_same():
    api = Statuses("running", "cancelled")
    client = AsyncClient("http://api.test", "k", transport=httpx.MockTransport(api))
    done = asyncio.run(client.evals.runs.wait("e1", interval=0.01))
    assert done["status"] == "cancelled" and api.reads == 2


def test_a_spent_wait_raises_with_the_last_read():
    api = Statuses("running")
    client = Client("http://api.test", "k", transport=httpx.MockTransport(api))
    with pytest.raises(EvalRunTimedOut) as raised:
        client.evals.runs.wait("e1", timeout=0)
    assert raised.value.run == eval_run("running") and api.reads == 1
    assert "eval run e1 did not end in time (2 cases running)" in str(raised.value)


def test_a_pause_never_passes_the_deadline():
    def timed_out(current: Any) -> HangoError:
        return HangoError(f"still {current}")

    unbounded = Poll(done=bool, interval=5.0, deadline=None, timed_out=timed_out)
    assert unbounded.pause("x") == 5.0
    near = Poll(done=bool, interval=1000.0, deadline=time.monotonic() + 3, timed_out=timed_out)
    assert 0 < near.pause("x") <= 3
    spent = Poll(done=bool, interval=1.0, deadline=time.monotonic() - 1, timed_out=timed_out)
    with pytest.raises(HangoError, match="still x"):
        spent.pause("x")
