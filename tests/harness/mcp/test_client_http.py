"""harness.mcp.client against the in-repo Streamable HTTP server, really started: the bearer
token, what a call brings back whole, the per-call timeout, a cancel, a listing that changes,
and what a call carries in ``_meta``."""

from __future__ import annotations

import gc
import logging
import socket
import threading
import time

import pytest
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED
from opentelemetry import trace

from harness.mcp import bridge, calls, transport
from harness.mcp.client import McpUnavailable, Target, connect, list_tools_once
from harness.tools.base import never
from tests.support.mcp_server import IDEMPOTENCY_KEY
from tests.support.mcp_servers import McpServerProcess
from tests.support.mcp_tools import big_text

TOOLS = {"echo", "slow", "meet", "big", "fail", "image", "structured", "resource",
         "lookup_order", "refund"}


@pytest.mark.slow
def test_the_right_token_lists_every_tool_and_calls_one(mcp_server: McpServerProcess):
    tools = {t.name: t for t in list_tools_once(mcp_server.target())}
    assert set(tools) == TOOLS
    assert tools["refund"].description == "Refund an amount on an order."
    assert tools["refund"].input_schema["required"] == ["order_id", "amount"]
    connection = connect(mcp_server.target())
    try:
        result = connection.call_tool("echo", {"text": "hello"})
    finally:
        connection.close()
    assert not result.is_error
    assert [block.text for block in result.content] == ["hello"]
    [call] = mcp_server.calls()
    assert (call["tool"], call["arguments"]) == ("echo", {"text": "hello"})
    assert (call["authorization"], call["authorized"]) == (True, True)
    assert mcp_server.journal()["refused"] == 0


@pytest.mark.slow
@pytest.mark.parametrize("headers", [{"Authorization": "Bearer wrong"}, {}],
                         ids=["wrong token", "no token"])
def test_a_wrong_or_missing_token_is_refused_and_nothing_runs(mcp_server: McpServerProcess,
                                                              headers: dict[str, str]):
    with pytest.raises(McpUnavailable) as caught:
        connect(mcp_server.target(headers=headers))
    assert str(caught.value) == ("could not connect: CredentialsRefused: the server answered "
                                 "401: it refused the credentials in the request's headers")
    journal = mcp_server.journal()
    assert journal["refused"] >= 1
    assert journal["calls"] == []


@pytest.mark.slow
def test_a_header_the_http_client_refuses_is_not_quoted(mcp_server: McpServerProcess):
    # h11 refuses a value with a space at an end, quoting it: a secret must not be shown.
    with pytest.raises(McpUnavailable) as caught:
        connect(mcp_server.target(headers={"Authorization": "Bearer s3cret-value "}))
    assert "s3cret-value" not in str(caught.value)
    assert "could not be sent" in str(caught.value)


@pytest.mark.slow
def test_results_come_through_whole(mcp_server: McpServerProcess):
    connection = connect(mcp_server.target())
    try:
        big = connection.call_tool("big", {"chars": 100_000})
        failed = connection.call_tool("fail", {"message": "order A7 is locked"})
        image = connection.call_tool("image", {})
        structured = connection.call_tool("structured", {"city": "Oslo"})
        resource = connection.call_tool("resource", {})
    finally:
        connection.close()
    [text] = big.content
    assert len(text.text) == 100_000
    assert text.text == big_text(100_000)
    assert failed.is_error and [b.text for b in failed.content] == ["order A7 is locked"]
    [png] = image.content
    assert (png.type, png.mime_type) == ("image", "image/png")
    assert structured.structured_content == {"city": "Oslo", "temperature_c": 21.5,
                                             "sky": "clear"}
    assert [b.type for b in resource.content] == ["resource", "resource_link"]


@pytest.mark.slow
def test_a_call_past_the_timeout_raises_and_the_session_goes_on(mcp_server: McpServerProcess):
    connection = connect(mcp_server.target(timeout_seconds=1.0))
    try:
        started = time.monotonic()
        with pytest.raises(TimeoutError):  # a ten-minute call: only the timeout ends it
            connection.call_tool("slow", {"seconds": 600})
        waited = time.monotonic() - started
        after = connection.call_tool("echo", {"text": "still here"})
    finally:
        connection.close()
    assert waited >= 0.9  # it waited its timeout (a lower bound: no machine makes it shorter)
    assert [b.text for b in after.content] == ["still here"]
    assert [c["tool"] for c in mcp_server.calls()] == ["slow", "echo"]


@pytest.mark.slow
def test_a_cancel_stops_the_wait_for_a_call_under_way(mcp_server: McpServerProcess):
    # A ten-minute call: the cancel, asked once the server has the call, ends the wait with
    # Cancelled; without it the session's timeout would end it with a TimeoutError instead.
    connection = connect(mcp_server.target(timeout_seconds=120.0))
    cancel = threading.Event()

    def cancel_once_the_server_has_it() -> None:
        deadline = time.monotonic() + 60
        while not mcp_server.calls("slow") and time.monotonic() < deadline:
            time.sleep(0.02)
        cancel.set()

    threading.Thread(target=cancel_once_the_server_has_it, daemon=True).start()
    try:
        with pytest.raises(bridge.Cancelled):
            connection.call_tool("slow", {"seconds": 600}, cancel_requested=cancel.is_set)
        after = connection.call_tool("echo", {"text": "next"})
    finally:
        connection.close()
    assert [b.text for b in after.content] == ["next"]
    assert [c["tool"] for c in mcp_server.calls()] == ["slow", "echo"]


@pytest.mark.slow
def test_a_second_listing_shows_tools_added_and_removed_meanwhile(mcp_server: McpServerProcess):
    connection = connect(mcp_server.target())
    try:
        first = {t.name for t in connection.list_tools()}
        now = mcp_server.set_tools(add=["search_docs"], remove=["refund"])
        second = {t.name for t in connection.list_tools()}
        added = connection.call_tool("search_docs", {"text": "refund policy"})
    finally:
        connection.close()
    assert first == TOOLS
    assert second == set(now) == TOOLS - {"refund"} | {"search_docs"}
    assert [b.text for b in added.content] == ["search_docs: refund policy"]
    assert {t.name for t in list_tools_once(mcp_server.target())} == second


@pytest.mark.slow
def test_the_idempotency_key_and_the_trace_context_travel_in_meta(mcp_server: McpServerProcess,
                                                                   spans):
    connection = connect(mcp_server.target())
    try:
        with trace.get_tracer(__name__).start_as_current_span("tool call") as span:
            connection.call_tool("refund", {"order_id": "A7", "amount": 12.5},
                                 meta={IDEMPOTENCY_KEY: "run-1:3:toolu_1"})
        connection.call_tool("refund", {"order_id": "A7", "amount": 12.5},
                             meta={IDEMPOTENCY_KEY: "run-1:3:toolu_1"})
    finally:
        connection.close()
    first, second = mcp_server.calls("refund")
    assert first["meta"][IDEMPOTENCY_KEY] == "run-1:3:toolu_1"
    trace_id = format(span.get_span_context().trace_id, "032x")
    assert first["meta"]["traceparent"].split("-")[1] == trace_id
    assert second["meta"]["traceparent"].split("-")[1] != trace_id
    # The HTTP request carries the call's context too (the span current when it was made).
    span_id = format(span.get_span_context().span_id, "016x")
    assert first["traceparent"].split("-")[1:3] == [trace_id, span_id]
    assert second["traceparent"] is None or trace_id not in second["traceparent"]
    assert mcp_server.journal()["keys"] == {"run-1:3:toolu_1": 2}  # the server counts per key
    assert mcp_server.journal()["counts"]["refund"] == 2


@pytest.mark.slow
def test_the_older_sse_transport_lists_calls_and_checks_the_token(mcp_server: McpServerProcess):
    sse = mcp_server.target(transport="sse", url=f"{mcp_server.base}/sse")
    assert {t.name for t in list_tools_once(sse)} == TOOLS
    connection = connect(sse)
    try:
        result = connection.call_tool("echo", {"text": "over SSE"})
    finally:
        connection.close()
    assert [b.text for b in result.content] == ["over SSE"]
    assert mcp_server.calls()[-1]["authorized"] is True
    with pytest.raises(McpUnavailable) as caught:
        connect(mcp_server.target(transport="sse", url=f"{mcp_server.base}/sse", headers={}))
    assert "401" in str(caught.value)


@pytest.mark.slow
def test_concurrent_calls_share_one_session_from_threads(mcp_server: McpServerProcess):
    # ``meet`` answers only once all twenty calls are under way at the server together: one
    # after another, the first would wait alone and answer an error.
    connection = connect(mcp_server.target(timeout_seconds=120.0))
    answers: list[str] = []

    def call(i: int) -> None:
        result = connection.call_tool("meet", {"group": "threads", "parties": 20})
        answers.append(result.content[0].text)

    threads = [threading.Thread(target=call, args=(i,)) for i in range(20)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        connection.close()
    assert answers == ["met 20"] * 20
    assert len(mcp_server.journal()["sessions"]) == 1  # one session carried them all


@pytest.mark.slow
def test_a_server_down_at_listing_time_and_at_call_time(mcp_server: McpServerProcess):
    # A call timeout past the guard below: the call can only end on the closed connection.
    connection = connect(mcp_server.target(timeout_seconds=120.0))
    try:
        mcp_server.stop()
        with pytest.raises(McpUnavailable) as listing:
            list_tools_once(mcp_server.target(timeout_seconds=3.0))
        started = time.monotonic()
        with pytest.raises(MCPError) as calling:  # the session's connection is gone
            connection.call_tool("echo", {"text": "anyone?"})
        while connection.open and time.monotonic() < started + 60:  # the session's task ends
            time.sleep(0.01)
        assert not connection.open
        with pytest.raises(McpUnavailable, match="the session to the server has ended"):
            connection.call_tool("echo", {"text": "again?"})
    finally:
        connection.close()
    assert "could not connect" in str(listing.value)
    assert calling.value.code == CONNECTION_CLOSED  # not a timeout: the connection closed
    mcp_server.restart()
    assert [c["tool"] for c in mcp_server.calls()] == []
    assert {t.name for t in list_tools_once(mcp_server.target())} == TOOLS


@pytest.mark.slow
def test_a_session_its_server_ended_leaves_no_error_unretrieved(mcp_server: McpServerProcess,
                                                                caplog):
    connection = connect(mcp_server.target())
    mcp_server.stop()
    with pytest.raises(MCPError):
        connection.call_tool("echo", {"text": "anyone?"})
    connection.close()
    del connection
    gc.collect()  # asyncio reports an exception never retrieved when its task is collected
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == []
    assert "an MCP session ended: " in caplog.text  # why, said once, at INFO


def test_a_server_that_never_answers_the_opening_is_left_at_the_timeout():
    """Its session is abandoned: it does not open later, held by no one, nor keep the
    connection waiting for an answer."""
    listener = socket.create_server(("127.0.0.1", 0))
    closed = threading.Event()

    def accept() -> None:
        peer, _ = listener.accept()
        with peer:
            while peer.recv(65536):  # the request, then nothing: until hango hangs up
                pass
        closed.set()

    threading.Thread(target=accept, daemon=True).start()
    target = Target(transport="streamable_http", timeout_seconds=1.0,
                    url=f"http://127.0.0.1:{listener.getsockname()[1]}/mcp")
    try:
        with pytest.raises(McpUnavailable, match="could not connect: no answer within 1 s"):
            connect(target)
        assert closed.wait(5)  # at once; the SDK alone would wait for its own timeouts
    finally:
        listener.close()




@pytest.mark.slow
def test_an_answer_past_the_byte_limit_is_dropped_saying_so(mcp_server: McpServerProcess,
                                                            monkeypatch):
    monkeypatch.setattr(transport, "MAX_RESPONSE_BYTES", 50_000)
    connection = connect(mcp_server.target(timeout_seconds=30.0))
    try:
        result = calls.send(connection, "big", {"chars": 100_000}, server="docs", key="k",
                            max_chars=1_000_000, cancel_requested=never)
    finally:
        connection.close()
    assert result.is_error
    assert result.content == ("The MCP server 'docs' answered, but its answer passed the 50,000 "
                              "bytes hango reads: the answer was dropped (the call ran).")
