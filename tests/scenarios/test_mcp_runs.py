"""Runs using MCP servers, executed by a real Celery worker process on the gevent pool (as
``make worker`` runs them): the in-repo Streamable HTTP server on loopback, its bearer token a
tenant credential, and the PyPI reference server ``mcp-server-time`` over stdio, the operator's
program. What goes wrong is in test_mcp_runs_faults.py; the same runs inline (no worker) in
test_mcp_inline.py."""

from __future__ import annotations

import json
import time

import pytest

from runs.live.waiting import MAX_WAIT_SECONDS
from tests.support.mcp_runs import (
    HELD,
    add_server,
    answer,
    calls_of,
    decide,
    events,
    keys_of,
    mcp_session,
    results,
    send,
    settled,
)
from tests.support.mcp_servers import TOKEN
from tests.support.runs import wait_for_run

pytestmark = pytest.mark.slow


def test_a_run_calls_tools_then_waits_for_approval_each_call_sent_once(
        mcp_worker, alice, make_agent, make_session, shop, mcp_server):
    session = mcp_session(alice, make_agent, make_session, [shop],
                          interrupt_on={"shop__refund": HELD})
    listed = len(mcp_server.journal()["sessions"])  # the API listed it to check interrupt_on
    run_id = send(alice, session, 'call shop__lookup_order {"order_id": "42"}',
                  'call shop__echo {"text": "checked"}',
                  'call shop__refund {"order_id": "42", "amount": 12.5}')
    run = settled(run_id)
    assert run.status == "awaiting_approval", run.error
    assert [c["tool"] for c in calls_of(mcp_server, run_id)] == ["lookup_order", "echo"]

    decide(alice, run_id, "approve")
    run = wait_for_run(run_id)
    assert run.status == "completed", run.error
    calls = calls_of(mcp_server, run_id)
    assert [c["tool"] for c in calls] == ["lookup_order", "echo", "refund"]
    assert all(c["authorized"] for c in calls)  # the tenant's credential, in the header
    keys = keys_of(mcp_server, run_id)
    assert sorted(keys.values()) == [1, 1, 1]  # three keys, each received once

    # One session a claim: the first carried both calls before the pause, the approved claim
    # opened the second for the refund.
    opened = [s["at"] for s in mcp_server.journal()["sessions"][listed:]]
    assert len(opened) == 2
    assert opened[0] < calls[0]["at"] < calls[1]["at"] < opened[1] < calls[2]["at"]

    refund = json.loads(results(run_id)["shop__refund"]["content"])
    assert refund["refunded"] == 12.5 and refund["refund_id"].startswith("rf_")
    assert "- shop__refund: " in answer(run_id)
    # The credential is never stored with the run nor logged.
    assert TOKEN not in json.dumps([run.state_json, events(run_id)]) + mcp_worker.current.log()


def test_a_run_asks_the_reference_time_server_over_stdio(mcp_worker, admin, alice, make_agent,
                                                          make_session):
    clock = add_server(admin, "clock", transport="stdio", command="time")
    session = mcp_session(alice, make_agent, make_session, [clock])
    run_id = send(alice, session, 'call clock__get_current_time {"timezone": "Europe/Paris"}')

    run = wait_for_run(run_id)
    assert run.status == "completed", run.error
    [listed] = events(run_id, "mcp.tools_listed")[0]["servers"]
    assert listed["server"] == "clock" and "get_current_time" in listed["tools"]
    result = results(run_id)["clock__get_current_time"]
    assert not result["is_error"], result
    said = json.loads(result["content"])
    assert said["timezone"] == "Europe/Paris" and said["datetime"].endswith(("+01:00", "+02:00"))
    assert '- clock__get_current_time: { "timezone": "Europe/Paris"' in answer(run_id)


def test_a_run_keeps_its_tool_list_when_the_server_changes_it_meanwhile(
        mcp_worker, alice, make_agent, make_session, shop, mcp_server):
    session = mcp_session(alice, make_agent, make_session, [shop],
                          interrupt_on={"shop__refund": HELD})
    run_id = send(alice, session, 'call shop__refund {"order_id": "7", "amount": 1}',
                  'call shop__echo {"text": "still there?"}',
                  "call shop__search_docs {}")
    assert settled(run_id).status == "awaiting_approval"

    mcp_server.set_tools(add=["search_docs"], remove=["echo"])
    decide(alice, run_id, "approve")
    run = wait_for_run(run_id)
    assert run.status == "completed", run.error

    [changed] = events(run_id, "mcp.tools_changed")
    assert changed["server"] == "shop"
    assert (changed["added"], changed["removed"]) == (["search_docs"], ["echo"])
    found = results(run_id)
    assert not found["shop__refund"]["is_error"]
    # The run still offers echo: the call goes out, and the server says it has no such tool...
    assert found["shop__echo"]["is_error"]
    assert [c["tool"] for c in calls_of(mcp_server, run_id)] == ["refund", "echo"]
    # ...and never the tool added after it listed: that is for the next run.
    assert found["shop__search_docs"]["is_error"]
    assert "There is no tool named 'shop__search_docs'" in found["shop__search_docs"]["content"]


def test_a_caller_waiting_on_the_run_hears_it_park_and_end(
        mcp_worker, alice, make_agent, make_session, shop, mcp_server):
    """``GET /v1/runs/{id}?wait=`` while a worker runs it: back when the run parks for a
    human, and again when it ends, with its output (not at the wait's end)."""
    session = mcp_session(alice, make_agent, make_session, [shop],
                          interrupt_on={"shop__refund": HELD})
    run_id = send(alice, session, 'call shop__refund {"order_id": "7", "amount": 1}')

    def waited() -> tuple[dict, float]:
        started = time.monotonic()
        response = alice.client.get(f"/v1/runs/{run_id}?wait={MAX_WAIT_SECONDS}")
        assert response.status_code == 200, response.content
        return response.json(), time.monotonic() - started

    # A wait that runs to its end answers after MAX_WAIT_SECONDS at the earliest, so an answer
    # before it can only be the park (or the end) waking it: no margin for the machine's speed.
    parked, took = waited()
    assert parked["status"] == "awaiting_approval" and parked["output"] is None
    assert took < MAX_WAIT_SECONDS, took  # woken by the park, not by the wait's end
    decide(alice, run_id, "approve")
    ended, took = waited()
    assert ended["status"] == "completed" and took < MAX_WAIT_SECONDS, (ended["status"], took)
    assert ended["output"]["stop_reason"] == "end_turn"
    assert "- shop__refund: " in ended["output"]["text"]
