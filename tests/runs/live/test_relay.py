"""runs.live.relay: a run's deltas through the suite's real Redis (pub/sub) or in this process, and
what a Redis that is down, hung or lost costs a publisher and a follower."""

from __future__ import annotations

import json
import socket
import time
import uuid

import pytest

from runs.execution.worker import Outcome, execute_run
from runs.intake.services import message_post
from runs.live import relay
from runs.live.redis import RedisHub
from runs.live.relay import LOCAL, LocalHub, RunDeltas, Silent
from runs.models import Session
from tests.support.broker import broker_url

TIMEOUT = 0.2


def test_a_delta_is_the_json_of_a_message_delta_event():
    hub = LocalHub()
    run_id = uuid.uuid4()
    follower = hub.subscribe(relay.channel(run_id))
    deltas = RunDeltas(run_id, hub)
    deltas.delta(3, 0, 'He said "hi"\n')
    deltas.delta(3, 1, "ü")
    assert [json.loads(follower.get(0) or "") for _ in range(2)] == [
        {"run": str(run_id), "turn": 3, "index": 0, "text": 'He said "hi"\n'},
        {"run": str(run_id), "turn": 3, "index": 1, "text": "ü"}]
    assert follower.get(0) is None


def test_in_process_followers_get_their_run_s_deltas_until_they_leave():
    hub = LocalHub()
    first, second = hub.subscribe("a"), hub.subscribe("a")
    other = hub.subscribe("b")
    hub.publish("a", "1")
    assert (first.get(0), second.get(0), other.get(0)) == ("1", "1", None)
    first.close()
    hub.publish("a", "2")
    assert (first.get(0), second.get(0)) == (None, "2")
    second.close()
    other.close()
    hub.publish("a", "3")  # nobody follows: nothing kept
    assert hub._followers == {}
    started = time.monotonic()
    assert hub.subscribe("c").get(0.05) is None
    assert time.monotonic() - started >= 0.05


def test_an_in_process_follower_that_falls_behind_loses_deltas_and_never_blocks(monkeypatch):
    monkeypatch.setattr(relay, "FOLLOWER_BACKLOG", 3)
    hub = LocalHub()
    follower = hub.subscribe("a")
    for n in range(5):
        hub.publish("a", str(n))
    assert [follower.get(0) for _ in range(4)] == ["0", "1", "2", None]


def test_without_a_live_redis_url_the_hub_is_this_process_s(hango_settings):
    hango_settings(live_redis_url="")
    assert relay.hub() is LOCAL
    hango_settings(stream_deltas=False)
    assert relay.run_deltas(uuid.uuid4()) is None


@pytest.fixture
def redis_hub(hango_settings) -> RedisHub:
    hango_settings(live_redis_url=broker_url(), live_publish_timeout=TIMEOUT)
    hub = relay.hub()
    assert isinstance(hub, RedisHub)
    return hub


def test_through_redis_a_follower_gets_what_is_published_after_it_subscribed(redis_hub):
    run_id = uuid.uuid4()
    probe = redis_hub.subscribe(relay.channel(run_id))
    RunDeltas(run_id, redis_hub).delta(1, 0, "too early")
    assert json.loads(probe.get(2) or "null")["text"] == "too early"  # sent, and gone
    probe.close()
    follower = redis_hub.subscribe(relay.channel(run_id))
    stranger = redis_hub.subscribe(relay.channel(uuid.uuid4()))
    try:
        deltas = RunDeltas(run_id, redis_hub)
        for index, word in enumerate(["One ", "two."]):
            deltas.delta(1, index, word)
        got = [json.loads(follower.get(2) or "null") for _ in range(2)]
        assert [d["text"] for d in got] == ["One ", "two."]
        assert follower.get(0.05) is None and stranger.get(0.05) is None
    finally:
        follower.close()
        stranger.close()


def test_a_redis_that_is_down_costs_one_failed_connect_then_nothing(caplog):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    hub = RedisHub(f"redis://:secret@127.0.0.1:{port}/0", TIMEOUT)
    started = time.monotonic()
    for index in range(1000):
        RunDeltas(uuid.uuid4(), hub).delta(1, index, "word ")
    assert time.monotonic() - started < TIMEOUT + 0.5 and hub.paused
    assert "live deltas are dropped for 5 s" in caplog.text and "secret" not in caplog.text
    assert isinstance(hub.subscribe("a"), Silent)


def test_a_hung_redis_holds_a_publish_for_the_timeout_at_most_once_per_pause(monkeypatch):
    with socket.socket() as silent:  # accepts connections, never answers a command
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        hub = RedisHub(f"redis://127.0.0.1:{silent.getsockname()[1]}/0", TIMEOUT)
        for _attempt in range(2):
            started = time.monotonic()
            for index in range(200):
                hub.publish("a", str(index))
            assert TIMEOUT * 0.9 <= time.monotonic() - started < TIMEOUT + 0.5
            assert hub.paused
            monkeypatch.setattr(hub, "_paused_until", time.monotonic() - 1)  # the pause is over
        subscribing = time.monotonic()
        assert isinstance(hub.subscribe("a"), Silent)
        assert time.monotonic() - subscribing < 2 * TIMEOUT + 0.5


def test_a_publish_does_not_wait_for_its_reply_and_replies_are_read_later(redis_hub):
    follower = redis_hub.subscribe("hango:run:pipelined:deltas")
    try:
        for index in range(100):
            redis_hub.publish("hango:run:pipelined:deltas", str(index))
        assert [follower.get(2) for _ in range(100)] == [str(i) for i in range(100)]
        # Redis has answered those 100: the next read (at the 128th send) takes their replies.
        for index in range(100, 128):
            redis_hub.publish("hango:run:pipelined:deltas", str(index))
        publisher = redis_hub.slot("hango:run:pipelined:deltas").publisher
        assert publisher is not None and publisher.unanswered <= 28
    finally:
        follower.close()


@pytest.mark.slow
def test_a_follower_whose_redis_goes_away_goes_on_without_deltas(redis_server):
    redis_server.start()
    hub = RedisHub(redis_server.url, TIMEOUT)
    follower = hub.subscribe("a")
    hub.publish("a", "before")
    assert follower.get(2) == "before"
    redis_server.stop()
    assert follower.get(0.5) is None  # the loss is noticed, not raised
    started = time.monotonic()
    assert follower.get(0.1) is None  # and then it only waits
    assert time.monotonic() - started >= 0.1
    follower.close()


def test_only_a_run_executing_beside_its_streams_keeps_its_call_s_deltas(hango_settings):
    """The embedded quickstart's thread keeps a call's deltas for a stream that opens mid-call;
    a Celery task (a worker, which serves no stream) keeps none: with 1,000 runs in flight they
    would be tens of megabytes no one reads."""
    from hango_project.celery import app

    hango_settings(live_redis_url="", stream_deltas=True)
    beside, in_task = uuid.uuid4(), uuid.uuid4()

    def publish(run_id: str) -> None:
        sink = relay.run_deltas(run_id)
        assert sink is not None
        sink.delta(1, 0, "Hello")

    publish(str(beside))  # as the quickstart's thread executes a run
    app.task(name="tests.publish_a_delta")(publish).apply((str(in_task),))  # as a worker does
    kept, missed = relay.follow(beside)
    assert [json.loads(p)["text"] for p in missed] == ["Hello"]
    kept.close()
    kept, missed = relay.follow(in_task)
    assert missed == []
    kept.close()


@pytest.mark.parametrize("through", ["process", "redis"])
def test_a_run_s_channel_has_each_turn_s_deltas_before_its_committed_marker(
        through, alice, make_session, broker, hango_settings, transactional_db):
    hango_settings(live_redis_url=broker if through == "redis" else "",
                   live_publish_timeout=TIMEOUT)
    session = Session.objects.get(pk=make_session(alice)["id"])
    _, run = message_post(session=session, content="hi")  # its task waits: nobody takes it
    follower = relay.hub().subscribe(relay.channel(run.pk))
    try:
        assert execute_run(str(run.pk)) == Outcome.COMPLETED
        run.refresh_from_db()
        got = []
        while not got or got[-1].get("seq") != run.event_seq:
            payload = follower.get(2)
            assert payload is not None, got
            got.append(json.loads(payload))
    finally:
        follower.close()
    markers = [(m["turn"], m["seq"]) for m in got if "seq" in m]
    assert markers[0] == (0, 2)  # the claim: the run's status event "running"
    assert markers[-1] == (run.turn, run.event_seq) == (5, 19)
    assert [turn for turn, _ in markers[1:]] == [1, 2, 3, 4, 5]  # a marker a committed turn
    assert all(set(m) == {"run", "turn", "seq"} for m in got if "seq" in m)
    # Each delta of a turn comes after the markers of the turns before it, before its own.
    for i, delta in enumerate(got):
        if "text" in delta:
            assert {m["turn"] for m in got[:i] if "seq" in m} == set(range(delta["turn"]))
    assert {d["turn"] for d in got if "text" in d} == {1, 5}
    assert [m for m in got if "end" in m] == []  # a call's end is not published
