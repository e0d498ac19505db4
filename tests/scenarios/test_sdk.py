"""The Python SDK (sdk/python, hango_client) against hango under gunicorn with a real Celery
worker and the scripted demo model: an agent, a session, a message run to its answer; the event
iterator carrying on across a connection cut in the middle of a run (it reconnects with
``Last-Event-ID`` and neither misses nor repeats an event); the async client the same way.

And client tools: ``client.run`` answering a run's ``requires_action`` with the caller's own
functions, a batch of two calls, one of which raises (submitted as a failed result)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator

import pytest
from hango_client import AsyncClient, Client, Event, RetryPolicy

from tests.support import workers
from tests.support.approvals import statuses
from tests.support.proxy import CuttingProxy
from tests.support.servers import GunicornProcess

pytestmark = pytest.mark.slow

MESSAGE = "count these four words"
ANSWER = f'You said: "{MESSAGE}". It has 4 words. All planned steps are done.'


@pytest.fixture
def server(alice, broker, start_worker, tmp_path) -> Iterator[GunicornProcess]:
    """gunicorn (threads: a stream and other requests at once) and one worker whose demo
    model takes 0.3 s a call: time to cut a stream mid-run."""
    start_worker(HANGO_SCRIPTED_DELAY_MS="300")
    served = GunicornProcess(tmp_path, database_url=workers.test_database_url(), threads=4, env={
        "CELERY_BROKER_URL": broker, "HANGO_RUN_INLINE": "0", "HANGO_EVENT_POLL_SECONDS": "0.1"})
    yield served
    served.stop()


@pytest.fixture
def proxy(server) -> Iterator[CuttingProxy]:
    cutting = CuttingProxy(server.port)
    yield cutting
    cutting.close()


def test_a_message_runs_to_its_answer(alice, server):
    with Client(server.url, alice.key) as client:
        assert client.account.me()["role"] == "member"
        agent = client.agents.create(name="sdk", model="scripted:demo")
        session = client.sessions.create(agent=agent, title="sdk")
        answer = client.run(session, MESSAGE, timeout=120)
        assert answer.text == ANSWER and answer.run["status"] == "completed"

        posted = client.sessions.send(session, MESSAGE)
        assert posted["run"]["status"] == "queued"
        run = client.wait(posted["run"], timeout=120)  # GET /v1/runs/{id}?wait=, repeated
        assert run["output"] == {"text": ANSWER, "stop_reason": answer.stop_reason}
        texts = [m["content"] for m in client.sessions.iter_messages(session, limit=3)]
        assert len(texts) == 20 and texts[-1] == [{"type": "text", "text": ANSWER}]
        assert [a["id"] for a in client.agents.iter()] == [agent["id"]]


def test_agent_versions_and_a_pinned_session(alice, server):
    with Client(server.url, alice.key) as client:
        agent = client.agents.create(name="sdk", model="scripted:demo", system_prompt="One.")
        assert client.agents.update(agent, system_prompt="Two.")["version"] == 2
        assert [v["number"] for v in client.agents.iter_versions(agent, limit=1)] == [2, 1]
        first = client.agents.version(agent, 1)
        assert first["system_prompt"] == "One." and first["author"] == str(alice.member.pk)
        diff = client.agents.diff(agent, 1, 2)
        assert diff["system_prompt"]["changed"] and not diff["model"]["changed"]
        session = client.sessions.create(agent=agent, agent_version=1)
        assert session["agent_version"] == 1
        answer = client.run(session, MESSAGE, timeout=120)
        assert answer.run["agent_version"] == 1
        assert client.sessions.update(session, agent_version=None)["agent_version"] is None


def test_events_carry_on_across_a_cut_connection(alice, server, proxy):
    with Client(server.url, alice.key) as direct, \
            Client(proxy.url, alice.key, retry=RetryPolicy(backoff=0.2)) as client:
        session = direct.sessions.create(agent=direct.agents.create(name="sdk",
                                                                    model="scripted:demo"))
        run = direct.sessions.send(session, MESSAGE)["run"]
        seen: list[Event] = []
        for event in client.runs.events(run):
            seen.append(event)
            if len([e for e in seen if e.seq is not None]) == 3:
                proxy.cut()  # mid-run: the demo takes six slow turns
        stored = direct.runs.events_page(run)["results"]

    durable = [e.seq for e in seen if e.seq is not None]
    assert durable == [e["seq"] for e in stored]  # every event once, in order
    assert [e.type for e in seen if e.seq is not None] == [e["type"] for e in stored]
    assert seen[-1].type == "run.status" and seen[-1].data["status"] == "completed"
    resumed = [int(m.group(1)) for chunk in proxy.requests
               if (m := re.search(rb"last-event-id: (\d+)", chunk, re.IGNORECASE))]
    assert max(resumed) >= 3, "the stream was opened again after the last event seen"


def test_the_async_client_does_the_same(alice, server, proxy):
    async def scenario() -> tuple[str, list[Event], list[int]]:
        async with AsyncClient(proxy.url, alice.key,
                               retry=RetryPolicy(backoff=0.2)) as client:
            agent = await client.agents.create(name="sdk", model="scripted:demo")
            session = await client.sessions.create(agent=agent)
            answer = await client.run(session, MESSAGE, timeout=120)
            run = (await client.sessions.send(session, MESSAGE))["run"]
            seen: list[Event] = []
            async for event in client.runs.events(run):
                seen.append(event)
                if len(seen) == 2:
                    proxy.cut()
            stored = (await client.runs.events_page(run))["results"]
            return answer.text, seen, [e["seq"] for e in stored]

    text, seen, stored = asyncio.run(scenario())
    assert text == ANSWER
    assert [e.seq for e in seen if e.seq is not None] == stored
    assert any(re.search(rb"last-event-id: [1-9]", chunk, re.IGNORECASE)
               for chunk in proxy.requests), "the stream was opened again after the cut"


def test_client_tools_are_answered_with_the_callers_functions(alice, server):
    looked_up: list[int] = []

    def lookup_order(order: int) -> str:
        looked_up.append(order)
        if order == 13:
            raise LookupError("no such order")
        return f"order {order} ships today"

    lookup = {"name": "lookup_order", "description": "Find an order by its number.",
              "input_schema": {"type": "object", "properties": {"order": {"type": "integer"}},
                               "required": ["order"]}}
    with Client(server.url, alice.key) as client:
        agent = client.agents.create(name="shop", model="scripted:calls",
                                     config={"client_tools": [lookup]})
        session = client.sessions.create(agent=agent)
        answer = client.run(session, 'call lookup_order {"order": 42} ; '
                                     'call lookup_order {"order": 13}',
                            tools={"lookup_order": lookup_order}, timeout=120)
        assert answer.run["status"] == "completed" and sorted(looked_up) == [13, 42]
        assert "lookup_order: order 42 ships today" in answer.text
        assert "lookup_order (error):" in answer.text and "no such order" in answer.text
    # Both calls were answered in one submission: the run parked once and resumed once.
    assert statuses(answer.run["id"]) == ["queued", "running", "requires_action", "queued",
                                          "running", "completed"]
