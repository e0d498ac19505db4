"""McpMiddleware against a real MCP server: the PyPI reference time server over stdio (and a
port nobody listens on, for a server out of reach)."""

from __future__ import annotations

import dataclasses

import pytest

from harness.approval_values import ApprovalDecision
from harness.deps import RunDeps, StackConfig
from harness.mcp.access import CachedListing, ServerUse
from harness.mcp.client import McpTool
from harness.mcp.values import idempotency_key
from harness.middleware import mcp
from harness.providers.scripted import ScriptedModel, text, tool_call
from harness.stack import default_stack
from harness.state import State
from harness.steps import Failed, FinalOutput, Interrupted, RunAgain
from tests.support.harness import make_agent, make_loop, run
from tests.support.mcp_access import NOWHERE, TIME_SERVER, LocalAccess, MemoryJournal

TIME = ServerUse(id="s-time", name="time")
NOW = "time__get_current_time"
ASK = {"timezone": "UTC"}
SENT_C1 = frozenset({idempotency_key("", 1, "c1")})  # c1 of turn 1, sent by an earlier claim


def access(*uses: ServerUse, **kwargs) -> LocalAccess:
    uses = uses or (TIME,)
    targets = {u.id: (NOWHERE if u.name == "down" else TIME_SERVER) for u in uses}
    return LocalAccess(targets=targets, uses=uses, **kwargs)


def loop_with(model, reach: LocalAccess, *, journal=None, config=None, capture_only=False):
    agent = make_agent(config=config or {})
    deps = RunDeps(mcp=reach, mcp_journal=journal)
    stack = default_stack(StackConfig(agent=agent, deps=deps, capture_only=capture_only))
    return make_loop(model, agent=agent, middlewares=stack)


@pytest.mark.slow
def test_a_run_lists_its_servers_once_and_calls_a_tool_like_any_other():
    reach, journal = access(), MemoryJournal()
    model = ScriptedModel([tool_call(NOW, ASK, call_id="c1"), text("done")])
    step, state, recorder = run(loop_with(model, reach, journal=journal))
    assert step == FinalOutput("end_turn")
    assert NOW in [t.name for t in model.calls[0].tools]
    # Checkpointed before the call (turn 1: the model's message only), answered in turn 2.
    assert [r.next for r in recorder.results] == [RunAgain(), RunAgain(), FinalOutput("end_turn")]
    assert [m.role for m in recorder.results[0].messages] == ["assistant"]
    result = recorder.results[1].messages[0].tool_results[0]
    assert '"timezone": "UTC"' in result.content and not result.is_error
    assert journal.records == [("c1", "time/get_current_time", ":1:c1")]
    assert reach.connects == ["s-time"] and reach.sent == ["get_current_time"]
    listed = [e for e in recorder.results[0].events if e[0] == mcp.EVENT_LISTED]
    assert listed[0][1]["servers"][0]["server"] == "time"
    assert "mcp" in state.private and reach.cache["s-time"].tools


@pytest.mark.slow
def test_a_run_s_sessions_close_with_what_it_holds_given_back_first():
    # Closing waits on each server, as a call does: a worker's run holds no database
    # connection meanwhile (hundreds of runs ending at once would hold the whole pool).
    reach = access()
    loop = loop_with(ScriptedModel([tool_call(NOW, ASK, call_id="c1"), text("done")]), reach,
                     journal=MemoryJournal())
    run(loop)
    loop.close()
    # Given back before the call is sent; the turns after it take a connection again (their
    # commits), so closing gives it back once more before it waits.
    assert reach.log == ["idle", "idle", "close"]


@pytest.mark.slow
def test_an_idempotent_server_s_calls_run_in_the_model_s_turn():
    reach = access(ServerUse(id="s-time", name="time", idempotent=True))
    model = ScriptedModel([tool_call(NOW, ASK, call_id="c1"), text("done")])
    _, _, recorder = run(loop_with(model, reach, journal=MemoryJournal()))
    assert [r.next for r in recorder.results] == [RunAgain(), FinalOutput("end_turn")]


def test_a_required_server_out_of_reach_fails_the_run_before_any_model_call():
    reach = access(ServerUse(id="s-down", name="down", required=True))
    model = ScriptedModel([text("never")])
    step, state, recorder = run(loop_with(model, reach))
    assert isinstance(step, Failed) and step.code == "mcp_server_unavailable"
    assert "'down' is required" in step.message and model.calls == []
    assert len(recorder.results) == 1
    assert "mcp" not in state.private  # nothing listed is kept: a resumed run lists anew


@pytest.mark.slow
def test_an_optional_server_out_of_reach_is_left_out_saying_so():
    reach = access(ServerUse(id="s-down", name="down"), TIME)
    model = ScriptedModel([text("fine")])
    step, _, recorder = run(loop_with(model, reach))
    assert step == FinalOutput("end_turn")
    assert [t.name for t in model.calls[0].tools if "__" in t.name] == [
        NOW, "time__convert_time"]
    [gone] = [e for e in recorder.results[0].events if e[0] == mcp.EVENT_UNAVAILABLE]
    assert gone[1]["server"] == "down" and gone[1]["code"] == "mcp_server_unavailable"


def test_a_missing_credential_of_a_required_server_names_it():
    reach = access(ServerUse(id="s-time", name="time", required=True), missing={"s-time"})
    step, _, _ = run(loop_with(ScriptedModel([text("never")]), reach))
    assert isinstance(step, Failed) and step.code == "credential_missing"
    assert "'time'" in step.message and "'token'" in step.message


@pytest.mark.slow
def test_a_call_sent_before_a_crash_is_not_sent_again():
    reach = access()
    model = ScriptedModel([tool_call(NOW, ASK, call_id="c1"), text("done")])
    first = loop_with(model, reach, journal=MemoryJournal())
    state = State(messages=[first_message()])
    assert first.start(state) is None
    checkpointed = first.turn(state, control=NeverCancel())  # turn 1 only: the batch kept
    first.close()
    assert checkpointed.next == RunAgain() and state.pending_batch is not None
    # Another worker takes over: the journal says c1 was sent.
    retaken = loop_with(model, access(), journal=MemoryJournal(before=SENT_C1))
    step, state, recorder = run(retaken, state)
    answer = recorder.results[0].messages[0].tool_results[0]
    assert answer.is_error and "whether the call ran is not known" in answer.content
    assert step == FinalOutput("end_turn")


@pytest.mark.slow
def test_under_interrupt_on_a_call_of_unknown_outcome_waits_for_a_human():
    config = {"interrupt_on": {NOW: ["approve", "edit", "reject"]}}
    model = ScriptedModel([text("done"), text("done")])
    reach = access()
    step, state = held_for_a_human(model, reach, config)
    # The human approves knowing (the service clears the call's journal entry): it is sent
    # again, once.
    step, state, recorder = run(loop_with(model, reach, journal=MemoryJournal(), config=config),
                                approved(state))
    assert reach.sent == ["get_current_time"] and step == FinalOutput("end_turn")


@pytest.mark.slow
def test_a_call_sent_again_after_approval_and_lost_again_asks_again():
    config = {"interrupt_on": {NOW: ["approve", "reject"]}}
    model = ScriptedModel([text("done")])
    reach = access()
    _, state = held_for_a_human(model, reach, config)
    # The approved call was journaled and sent anew, then that worker died too: the decision
    # in the checkpoint does not send it a third time.
    step, state, _ = run(loop_with(model, reach, journal=MemoryJournal(before=SENT_C1),
                                   config=config), approved(state))
    assert step == Interrupted("paused") and reach.sent == []
    assert state.pending_batch.held[0].reason == "outcome_unknown"


def held_for_a_human(model, reach, config):
    state = State(messages=[first_message(), tool_call(NOW, ASK, call_id="c1").message], turn=1)
    state.pending_batch = in_flight_of(NOW, "c1")
    retaken = loop_with(model, reach, journal=MemoryJournal(before=SENT_C1), config=config)
    step, state, _ = run(retaken, state)
    assert step == Interrupted("paused")
    [held] = state.pending_batch.held
    assert held.reason == "outcome_unknown" and reach.sent == []
    assert "edit" not in held.allowed_decisions  # an edited call would carry the first's key
    return step, state


def approved(state):
    state.pending_batch = dataclasses.replace(
        state.pending_batch, decisions={"c1": ApprovalDecision(type="approve")})
    return state


def test_the_inspector_uses_the_cached_listing_and_never_connects():
    cached = CachedListing(tools=(McpTool(name="lookup", description="Find.",
                                          input_schema={"type": "object"}),), listed_at=5.0)
    reach = access(cache={"s-time": cached})
    model = ScriptedModel([text("x")])
    loop = loop_with(model, reach, capture_only=True)
    state = State(messages=[first_message()])
    loop.chain.before_run(state)
    assert [t.name for t in loop.chain.tools(state, ()) if "__" in t.name] == ["time__lookup"]
    assert reach.connects == []
    [report] = mcp.report_of(loop.chain.middlewares)
    assert (report.source, report.status, report.listed_at, report.tools) == (
        "cache", "listed", 5.0, 1)


def test_the_inspector_says_a_server_was_never_listed_or_is_out_of_reach():
    down = ServerUse(id="s-down", name="down")
    reach = access(TIME, down, cache={"s-down": CachedListing(error="refused", listed_at=None)})
    loop = loop_with(ScriptedModel([]), reach, capture_only=True)
    loop.chain.before_run(State(messages=[first_message()]))
    assert [(r.name, r.status, r.error) for r in mcp.report_of(loop.chain.middlewares)] == [
        ("time", "never_listed", ""), ("down", "unreachable", "refused")]


@pytest.mark.slow
def test_a_resumed_run_keeps_its_tools_and_says_what_the_server_changed():
    reach = access()
    state = State(messages=[first_message()], turn=2)
    stale = McpTool(name="get_current_time", description="old", input_schema={"type": "object"})
    state.private["mcp"] = {"servers": {"s-time": {"name": "time", "digest": "x",
                                                   "tools": [stale.to_json()]}}}
    model = ScriptedModel([tool_call(NOW, ASK, call_id="c9"), text("done")])
    _, _, recorder = run(loop_with(model, reach, journal=MemoryJournal()), state)
    assert [t.name for t in model.calls[0].tools if "__" in t.name] == [NOW]
    [changed] = [e for r in recorder.results for e in r.events if e[0] == mcp.EVENT_CHANGED]
    assert changed[1] == {"server": "time", "added": ["convert_time"], "removed": [],
                          "changed": ["get_current_time"]}


@pytest.fixture(autouse=True)
def _closed():
    yield  # sessions a test left open are closed with the process's loop


def first_message():
    from harness.messages import Message
    return Message.user("What time is it?")


def in_flight_of(name, call_id):
    from harness import approvals
    from harness.messages import ToolUseBlock
    return approvals.in_flight([ToolUseBlock(id=call_id, name=name, input=ASK)], turn=1)


class NeverCancel:
    def cancel_requested(self) -> bool:
        return False


@pytest.mark.slow
def test_a_tool_filtered_out_after_the_run_listed_it_is_offered_no_more():
    model = ScriptedModel([text("x"), text("y")])
    first = loop_with(model, access())
    state = State(messages=[first_message()])
    first.chain.before_run(state)
    assert NOW in [t.name for t in first.chain.tools(state, ())]
    first.close()
    denied = ServerUse(id="s-time", name="time", deny=frozenset({"get_current_time"}))
    later = loop_with(model, access(denied))  # the next claim, the server's deny list changed
    later.chain.before_run(state)
    offered = [t.name for t in later.chain.tools(state, ()) if t.name.startswith("time__")]
    assert NOW not in offered and offered  # its other tools stay
    later.close()


@pytest.mark.slow
def test_a_credential_removed_mid_run_stops_it_before_the_batch_sends_anything():
    model = ScriptedModel([text("done")])
    listed = loop_with(model, access(), journal=MemoryJournal())
    state = State(messages=[first_message()])
    listed.chain.before_run(state)  # the run listed the server while its credential was set
    listed.close()
    state.messages.append(tool_call(NOW, ASK, call_id="c1").message)
    state.turn = 1
    state.pending_batch = in_flight_of(NOW, "c1")
    reach = access(missing={"s-time"})  # then it was removed
    step, state, _ = run(loop_with(model, reach, journal=MemoryJournal()), state)
    assert isinstance(step, Failed) and step.code == "credential_missing"
    assert "'token'" in step.message and "'time'" in step.message
    assert reach.sent == [] and state.pending_batch is not None  # kept for the resume


@pytest.mark.slow
def test_a_credential_missing_in_the_model_s_turn_keeps_its_calls_for_the_resume():
    idempotent = ServerUse(id="s-time", name="time", idempotent=True)  # no early checkpoint
    model = ScriptedModel([tool_call(NOW, ASK, call_id="c1"), text("done")])
    state = State(messages=[first_message()])
    listed = loop_with(model, access(idempotent))
    listed.chain.before_run(state)
    listed.close()
    reach = access(idempotent, missing={"s-time"})
    step, state, recorder = run(loop_with(model, reach), state)
    assert isinstance(step, Failed) and step.code == "credential_missing" and reach.sent == []
    assert [p.tool_use_id for p in state.pending_batch.pending] == ["c1"]
    assert recorder.results[-1].messages[-1].tool_uses[0].id == "c1"  # the call, committed
    # Set again: the resume runs the kept call, and the model answers.
    step, state, _ = run(loop_with(model, access(idempotent)), state)
    assert step == FinalOutput("end_turn") and state.pending_batch is None
