"""Runs using MCP servers when something goes wrong, executed by a real Celery worker process on
the gevent pool: the worker killed (``kill -9``) while a call is in flight, a credential refused,
missing or removed while a run waits, the server down when the run lists its tools or when it
calls one. The runs that go well are in test_mcp_runs.py."""

from __future__ import annotations

import pytest

from harness.middleware.mcp import OUTCOME_UNKNOWN
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
    set_credential,
    settled,
    wait_for_call,
)
from tests.support.runs import wait_for_run

pytestmark = pytest.mark.slow

SLOW = 'call shop__slow {"seconds": 8}'  # in flight long after its worker is killed


def test_a_call_in_flight_when_its_worker_is_killed_is_not_sent_again(
        mcp_worker, alice, make_agent, make_session, shop, mcp_server):
    plain = send(alice, mcp_session(alice, make_agent, make_session, [shop]), SLOW)
    held = send(alice, mcp_session(alice, make_agent, make_session, [shop],
                                   interrupt_on={"shop__slow": HELD}), SLOW)
    assert settled(held).status == "awaiting_approval"
    decide(alice, held, "approve")
    for run_id in (plain, held):  # both sent, neither answered yet
        wait_for_call(mcp_server, run_id, "slow")

    mcp_worker.current.kill()
    mcp_worker.replace()  # its reconciler takes both runs over once their leases run out

    # The model reads that the outcome is unknown; the call is not sent again.
    run = wait_for_run(plain)
    assert run.status == "completed", run.error
    result = results(plain)["shop__slow"]
    assert result["is_error"] and result["content"] == OUTCOME_UNKNOWN.format(server="shop")
    assert "- shop__slow (error): hango sent this call to the MCP server 'shop'" in answer(plain)

    # Under interrupt_on, a human decides instead, told why.
    run = settled(held)
    assert run.status == "awaiting_approval", run.error
    [pending] = alice.client.get(f"/v1/runs/{held}").json()["pending_approvals"]
    assert (pending["name"], pending["reason"]) == ("shop__slow", "outcome_unknown")
    decide(alice, held, "reject", message="It may have run: check first.")
    assert wait_for_run(held).status == "completed"

    for run_id in (plain, held):
        assert list(keys_of(mcp_server, run_id).values()) == [1]  # received once, ever


def test_a_refused_credential_fails_the_run_naming_the_server(mcp_worker, admin, alice,
                                                              make_agent, make_session,
                                                              mcp_server):
    set_credential(admin, "shop-token", "not-the-token")
    shop = add_server(admin, "shop", mcp_server, required=True)
    session = mcp_session(alice, make_agent, make_session, [shop])
    run_id = send(alice, session, 'call shop__lookup_order {"order_id": "9"}')

    run = wait_for_run(run_id)
    assert (run.status, run.error["code"]) == ("failed", "mcp_server_unavailable")
    assert "The MCP server 'shop' is required" in run.error["message"]
    assert "401" in run.error["message"] and "not-the-token" not in run.error["message"]
    assert mcp_server.journal()["refused"] >= 1 and mcp_server.calls() == []

    # Fixed, the run is resumed by its member and goes on.
    set_credential(admin, "shop-token")
    assert alice.client.post(f"/v1/runs/{run_id}/resume").status_code == 202
    run = wait_for_run(run_id)
    assert run.status == "completed", run.error
    assert [c["tool"] for c in calls_of(mcp_server, run_id)] == ["lookup_order"]


def test_runs_stopped_for_a_missing_credential_go_on_once_the_tenant_sets_it(
        mcp_worker, admin, alice, bob, make_agent, make_session, mcp_server):
    shop = add_server(admin, "shop", mcp_server, required=True)
    waiting = [send(caller, mcp_session(caller, make_agent, make_session, [shop]),
                    'call shop__echo {"text": "hi"}') for caller in (alice, bob)]
    for run_id in waiting:
        run = wait_for_run(run_id)
        assert (run.status, run.error["code"]) == ("failed", "credential_missing")
        assert "'shop'" in run.error["message"] and "'shop-token'" in run.error["message"]
    assert mcp_server.journal()["sessions"] == []  # stopped before connecting

    set_credential(admin, "shop-token")  # the tenant's: every member's run goes on
    for run_id in waiting:
        run = wait_for_run(run_id)
        assert run.status == "completed", run.error
        assert list(keys_of(mcp_server, run_id).values()) == [1]


def test_a_required_server_down_at_listing_fails_the_run_until_it_is_resumed(
        mcp_worker, admin, alice, make_agent, make_session, mcp_server):
    set_credential(admin, "shop-token")
    shop = add_server(admin, "shop", mcp_server, required=True)
    session = mcp_session(alice, make_agent, make_session, [shop])
    mcp_server.stop()
    run_id = send(alice, session, 'call shop__echo {"text": "hi"}')

    run = wait_for_run(run_id)
    assert (run.status, run.error["code"]) == ("failed", "mcp_server_unavailable")
    assert run.error["message"].startswith(
        "The MCP server 'shop' is required and could not be used: could not connect")

    mcp_server.start()
    assert alice.client.post(f"/v1/runs/{run_id}/resume").status_code == 202
    assert wait_for_run(run_id).status == "completed"
    assert "- shop__echo: hi" in answer(run_id)


def test_a_server_down_at_listing_is_left_out_when_not_required(
        mcp_worker, admin, alice, make_agent, make_session, shop, mcp_server):
    clock = add_server(admin, "clock", transport="stdio", command="time")
    session = mcp_session(alice, make_agent, make_session, [shop, clock])
    mcp_server.stop()
    run_id = send(alice, session, 'call shop__echo {"text": "hi"}',
                  'call clock__get_current_time {"timezone": "UTC"}')

    run = wait_for_run(run_id)
    assert run.status == "completed", run.error
    [unavailable] = events(run_id, "mcp.server_unavailable")
    assert (unavailable["server"], unavailable["code"]) == ("shop", "mcp_server_unavailable")
    assert unavailable["reason"].startswith("could not connect")
    [listed] = events(run_id, "mcp.tools_listed")
    assert [s["server"] for s in listed["servers"]] == ["clock"]
    found = results(run_id)
    assert found["shop__echo"]["is_error"]  # not offered: the model is told so
    assert not found["clock__get_current_time"]["is_error"]


def test_a_credential_removed_while_a_run_waits_stops_it_until_it_is_set_again(
        mcp_worker, admin, alice, make_agent, make_session, shop, mcp_server):
    session = mcp_session(alice, make_agent, make_session, [shop],
                          interrupt_on={"shop__refund": HELD})
    run_id = send(alice, session, 'call shop__refund {"order_id": "5", "amount": 3}')
    assert settled(run_id).status == "awaiting_approval"
    removed = admin.client.delete("/v1/credentials/shop-token?scope=tenant")
    assert removed.status_code == 204, removed.content
    decide(alice, run_id, "approve")

    run = wait_for_run(run_id)
    assert (run.status, run.error["code"]) == ("failed", "credential_missing")
    assert "'shop'" in run.error["message"] and "'shop-token'" in run.error["message"]
    assert calls_of(mcp_server, run_id) == []  # stopped before the approved call was sent

    set_credential(admin, "shop-token")  # the run goes on by itself, its batch as approved
    run = wait_for_run(run_id)
    assert run.status == "completed", run.error
    assert list(keys_of(mcp_server, run_id).values()) == [1]
    assert not results(run_id)["shop__refund"]["is_error"]


@pytest.mark.parametrize("meanwhile", ["server stopped", "credential replaced"])
def test_a_server_unusable_at_call_time_is_an_error_the_model_reads(
        meanwhile, mcp_worker, admin, alice, make_agent, make_session, shop, mcp_server):
    session = mcp_session(alice, make_agent, make_session, [shop],
                          interrupt_on={"shop__refund": HELD})
    run_id = send(alice, session, 'call shop__refund {"order_id": "5", "amount": 3}')
    assert settled(run_id).status == "awaiting_approval"
    if meanwhile == "server stopped":
        mcp_server.stop()
    else:
        set_credential(admin, "shop-token", "not-the-token")
    decide(alice, run_id, "approve")

    run = wait_for_run(run_id)
    assert run.status == "completed", run.error
    result = results(run_id)["shop__refund"]
    assert result["is_error"]
    assert result["content"].startswith(
        "The MCP server 'shop' could not be used: could not connect: "
        + ("ConnectError" if meanwhile == "server stopped" else
           "CredentialsRefused: the server answered 401"))
    assert result["content"].endswith("The call was not sent.")
    assert "- shop__refund (error): The MCP server 'shop' could not be used" in answer(run_id)
    if meanwhile == "credential replaced":
        assert calls_of(mcp_server, run_id) == []


def test_a_server_lost_mid_call_leaves_the_calls_outcome_unknown(
        mcp_worker, alice, make_agent, make_session, shop, mcp_server):
    run_id = send(alice, mcp_session(alice, make_agent, make_session, [shop]), SLOW)
    wait_for_call(mcp_server, run_id, "slow")
    mcp_server.kill()

    run = wait_for_run(run_id)
    assert run.status == "completed", run.error
    result = results(run_id)["shop__slow"]
    assert result["is_error"]
    assert result["content"] == ("The connection to the MCP server 'shop' closed before the "
                                 "call's answer came; whether it ran is not known.")
    mcp_server.start()
    assert list(keys_of(mcp_server, run_id).values()) == [1]
