"""The Python SDK's evals group (``client.evals``: hango_client/resources/evals.py) against
hango's API on pytest-django's live server, runs executed in its process with the scripted demo
model: suites and their cases written and read, a case made from a session; eval runs started,
waited on, listed and compared; one whose runs are held in their model call timed out and
cancelled; another tenant's objects a 404 and bad input a 422, raised as the SDK's
:class:`ApiError`; and the async client the same way."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from hango_client import NO_RETRIES, ApiError, AsyncClient, Client, EvalRunTimedOut

from harness.messages import Request as HarnessRequest
from harness.messages import Response
from harness.providers.scripted import text

pytestmark = pytest.mark.usefixtures("inline_runs")

QUOTES = {"name": "quotes", "turns": ["count these words"],
          "graders": [{"type": "contains", "value": "count these words"}]}
FRENCH = {"name": "french", "turns": ["hello"],
          "graders": [{"type": "regex", "pattern": "^Bonjour"}]}


@pytest.fixture
def client(live_server, alice) -> Iterator[Client]:
    with Client(live_server.url, alice.key, retry=NO_RETRIES) as made:
        yield made


@pytest.fixture
def stranger(live_server, outsider) -> Iterator[Client]:
    """The owner of another tenant."""
    with Client(live_server.url, outsider.key, retry=NO_RETRIES) as made:
        yield made


@pytest.fixture
def suite(client) -> dict[str, Any]:
    made = client.evals.suites.create(name="smoke")
    for case in (QUOTES, FRENCH):
        client.evals.cases.create(made, **case)
    return dict(made)


@pytest.fixture
def agent(client) -> dict[str, Any]:
    return dict(client.agents.create(name="helper", model="scripted:demo"))


def api_error(call: Any, status: int, code: str) -> ApiError:
    with pytest.raises(ApiError) as raised:
        call()
    assert (raised.value.status, raised.value.code) == (status, code), raised.value
    return raised.value


def test_suites_and_their_cases(client, agent):
    suites = client.evals.suites
    suite = suites.create(name="smoke", description="first")
    assert suites.update(suite, description="checks")["description"] == "checks"
    quotes = client.evals.cases.create(suite, **QUOTES)
    french = client.evals.cases.create(suite["id"], name="french", turns=["hello"],
                                       setup={"files": {"/notes.md": "teal"}, "memory": {}})
    assert french["setup"] == {"files": {"/notes.md": "teal"}, "memory": {}}
    assert suites.get(suite)["case_count"] == 2
    first = client.evals.cases.list(suite, limit=1)
    assert [c["name"] for c in first["results"]] == ["quotes"] and first["next"]
    assert [c["name"] for c in client.evals.cases.iter(suite, limit=1)] == ["quotes", "french"]
    changed = client.evals.cases.update(suite, quotes, turns=["one", "two"])
    assert client.evals.cases.get(suite, quotes)["turns"] == changed["turns"] == ["one", "two"]

    session = client.sessions.create(agent=agent, title="greeting")
    answer = client.run(session, "count these four words", timeout=120)
    replayed = client.evals.cases.from_session(suite, session=session, expect="exact")
    assert replayed["name"] == "greeting" and replayed["turns"] == ["count these four words"]
    assert replayed["graders"] == [{"type": "exact", "value": answer.text}]

    client.evals.cases.delete(suite, quotes)
    api_error(lambda: client.evals.cases.get(suite, quotes), 404, "not_found")
    other = suites.create(name="another")
    assert [s["name"] for s in suites.list()["results"]] == ["another", "smoke"]
    assert [s["name"] for s in suites.iter(limit=1)] == ["another", "smoke"]
    suites.delete(other)
    api_error(lambda: suites.get(other), 404, "not_found")


def test_an_eval_run_waited_on_listed_and_compared(client, suite, agent):
    runs = client.evals.runs
    base = runs.wait(runs.start(suite=suite, agent=agent), interval=0.1)
    assert base["status"] == "completed" and base["version"] == 1
    assert (base["summary"]["passed"], base["summary"]["cases"]) == (1, 2)
    assert {r["case_name"]: r["status"] for r in base["results"] or []} == {
        "quotes": "passed", "french": "failed"}

    quotes = next(c for c in client.evals.cases.iter(suite) if c["name"] == "quotes")
    client.evals.cases.update(suite, quotes, graders=[{"type": "exact", "value": "else"}])
    head = runs.wait(runs.start(suite=suite["id"], agent=agent["id"], version=1,
                                overrides={"exclude": []}))
    assert runs.get(head)["summary"]["passed"] == 0
    compared = runs.compare(base, head)
    assert [c["name"] for c in compared["regressed"]] == ["quotes"]
    assert compared["pass_rate"] == {"base": 0.5, "head": 0.0, "delta": -0.5}

    listed = runs.list(suite=suite, agent=agent)
    assert [r["id"] for r in listed["results"]] == [head["id"], base["id"]]
    assert listed["results"][0]["results"] is None
    assert [r["id"] for r in runs.iter(limit=1)] == [head["id"], base["id"]]
    api_error(lambda: runs.cancel(head), 409, "conflict")


class Held:
    """A model that answers only once the test lets it: the runs calling it stay running."""

    name = "scripted"

    def __init__(self) -> None:
        self.release, self.calls = threading.Event(), 0
        self._lock = threading.Lock()

    def complete(self, request: HarnessRequest) -> Response:
        with self._lock:
            self.calls += 1
        self.release.wait(timeout=300)
        return text("done")

    def wait_for_calls(self, count: int) -> None:
        deadline = time.monotonic() + 120  # a guard against a hang, not a bound
        while self.calls < count:
            assert time.monotonic() < deadline, f"{self.calls} of {count} calls under way"
            time.sleep(0.05)


def test_an_eval_run_that_does_not_end_times_out_and_is_cancelled(client, suite,
                                                                  hango_settings, serve_model):
    held = Held()
    serve_model("scripted:held", held)
    hango_settings(run_inline=False, broker_url="")  # runs on this process's threads
    agent = client.agents.create(name="held", model="scripted:held")
    try:
        started = client.evals.runs.start(suite=suite, agent=agent)
        held.wait_for_calls(2)  # both cases' runs wait in their model call
        with pytest.raises(EvalRunTimedOut) as raised:
            client.evals.runs.wait(started, timeout=0)
        assert raised.value.run["status"] == "running"
        assert "2 cases running" in str(raised.value)
        cancelled = client.evals.runs.cancel(started)
        assert cancelled["status"] == "cancelled" and cancelled["summary"]["cancelled"] == 2
    finally:
        held.release.set()
    assert client.evals.runs.wait(started, timeout=0)["status"] == "cancelled"
    with pytest.raises(ValueError):
        client.evals.runs.wait(started, interval=0)


def test_another_tenants_objects_are_404_and_bad_input_422(client, stranger, suite, agent):
    eval_run = client.evals.runs.start(suite=suite, agent=agent)
    [case, _] = client.evals.cases.list(suite)["results"]
    for call in (lambda: stranger.evals.suites.get(suite),
                 lambda: stranger.evals.suites.update(suite, name="mine"),
                 lambda: stranger.evals.suites.delete(suite),
                 lambda: stranger.evals.cases.list(suite),
                 lambda: stranger.evals.cases.create(suite, **QUOTES),
                 lambda: stranger.evals.cases.get(suite, case),
                 lambda: stranger.evals.cases.update(suite, case, name="mine"),
                 lambda: stranger.evals.cases.delete(suite, case),
                 lambda: stranger.evals.runs.get(eval_run),
                 lambda: stranger.evals.runs.cancel(eval_run),
                 lambda: stranger.evals.runs.compare(eval_run, eval_run),
                 lambda: stranger.evals.runs.wait(eval_run)):
        api_error(call, 404, "not_found")
    assert stranger.evals.runs.list()["results"] == []

    theirs = stranger.evals.suites.create(name="theirs")
    error = api_error(lambda: client.evals.runs.start(suite=theirs, agent=agent), 422,
                      "validation_error")
    assert set(error.detail) == {"suite"}
    error = api_error(lambda: client.evals.cases.create(suite, name="empty", turns=[]), 422,
                      "validation_error")
    assert "turns" in error.detail
    error = api_error(lambda: client.evals.cases.update(suite, case, graders=[{"type": "nope"}]),
                      422, "validation_error")
    assert "graders" in error.detail
    session = stranger.sessions.create(agent=stranger.agents.create(name="x",
                                                                    model="scripted:demo"))
    error = api_error(lambda: client.evals.cases.from_session(suite, session=session), 422,
                      "validation_error")
    assert set(error.detail) == {"session"}
    api_error(lambda: client.evals.suites.create(name="smoke"), 409, "conflict")


def test_the_async_client_does_the_same(live_server, alice, outsider):
    async def scenario() -> tuple[Any, Any, ApiError]:
        async with AsyncClient(live_server.url, alice.key, retry=NO_RETRIES) as client:
            agent = await client.agents.create(name="helper", model="scripted:demo")
            suite = await client.evals.suites.create(name="smoke")
            case = await client.evals.cases.create(suite, **QUOTES)
            await client.evals.cases.update(suite, case, name="renamed")
            started = await client.evals.runs.start(suite=suite, agent=agent)
            done = await client.evals.runs.wait(started, interval=0.1)
            listed = [r["id"] async for r in client.evals.runs.iter(suite=suite)]
            compared = await client.evals.runs.compare(done, done)
        async with AsyncClient(live_server.url, outsider.key, retry=NO_RETRIES) as stranger:
            try:
                await stranger.evals.runs.get(done)
            except ApiError as exc:
                return done, (listed, compared), exc
        raise AssertionError("another tenant read the eval run")

    done, (listed, compared), error = asyncio.run(scenario())
    assert done["status"] == "completed" and done["summary"]["passed"] == 1
    assert [r["case_name"] for r in done["results"]] == ["renamed"]
    assert listed == [done["id"]] and compared["regressed"] == []
    assert (error.status, error.code) == (404, "not_found")
