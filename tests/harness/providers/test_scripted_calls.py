"""scripted:calls (harness.providers.scripted_calls): the calls its user asks for, a line a turn,
a batch a line, then what came back; the same calls under the same ids however often the run is
played, after earlier exchanges and after compaction."""

from __future__ import annotations

from dataclasses import replace

import pytest

from harness.deps import RunDeps, StackConfig
from harness.history import is_summary, validate
from harness.messages import Message, Request, ToolResultBlock, ToolUseBlock
from harness.providers import resolve_provider
from harness.providers.base import ProviderSettings
from harness.providers.scripted import ConversationScript, named_script
from harness.providers.scripted_calls import (
    ASKED,
    Call,
    Unreadable,
    asked_calls,
    asked_note,
    parse_line,
)
from harness.stack import default_stack
from harness.state import State
from harness.steps import FinalOutput
from harness.tools.base import Tool
from tests.support.files import MemoryFiles
from tests.support.harness import Recorder, make_agent, make_loop, run
from tests.support.summarization import Recording, make, small

ASK = """Please run these.
call echo {"text": "one"}
call echo {"text": "two ; three"} ; call word_count {"text": "a b c"}
and then this:
call nope
"""


def uses(state: State) -> list[list[tuple[str, str]]]:
    """Each assistant message's calls: (id, tool)."""
    return [[(u.id, u.name) for u in m.tool_uses] for m in state.messages if m.tool_uses]


def test_each_call_line_is_a_turn_and_a_line_of_calls_one_batch_then_the_report():
    step, state, _ = run(make_loop(named_script("calls")), State(messages=[Message.user(ASK)]))
    assert step == FinalOutput("end_turn")
    assert uses(state) == [[("call_0_0_0", "echo")],
                           [("call_0_1_0", "echo"), ("call_0_1_1", "word_count")],
                           [("call_0_2_0", "nope")]]
    assert state.messages[3].tool_uses[0].input == {"text": "two ; three"}
    report = state.messages[-1].text.splitlines()
    assert report[:4] == ["Made 4 calls:", "- echo: one", "- echo: two ; three",
                          "- word_count: 3"]
    assert report[4].startswith("- nope (error): There is no tool named 'nope'.")


def test_a_long_result_is_cut_to_80_characters_on_one_line():
    long = "word\n" * 40
    request = Request(model="calls", messages=(
        Message.user('call echo {"text": "x"}'),
        Message(role="assistant", content=(ToolUseBlock(id="call_0_0_0", name="echo",
                                                        input={"text": "x"}),)),
        Message(role="user", content=(ToolResultBlock(tool_use_id="call_0_0_0",
                                                      content=long),))))
    answer = named_script("calls").complete(request).message.text
    assert answer == "Made 1 call:\n- echo: " + ("word " * 16).strip() + "…"


def test_the_same_conversation_gets_the_same_calls_and_a_stopped_run_goes_on_the_same():
    whole = run(make_loop(named_script("calls")), State(messages=[Message.user(ASK)]))[1]
    again = run(make_loop(named_script("calls")), State(messages=[Message.user(ASK)]))[1]
    assert again.messages == whole.messages
    state = State(messages=[Message.user(ASK)])
    run(make_loop(named_script("calls")), state, checkpointer=Recorder(keep_going=False))
    assert len(state.messages) == 3  # stopped after the first batch, as a crash would
    run(make_loop(named_script("calls")), state)
    assert state.messages == whole.messages


def test_the_ids_carry_the_user_messages_seq_and_earlier_exchanges_are_left_alone():
    first = [replace(Message.user('call echo {"text": "earlier"}'), seq=3)]
    run(make_loop(named_script("calls")), state := State(messages=first))
    assert uses(state) == [[("call_3_0_0", "echo")]]
    state.messages.append(replace(Message.user('call word_count {"text": "x y"}'), seq=9))
    run(make_loop(named_script("calls")), state)
    assert uses(state)[-1] == [("call_9_0_0", "word_count")]
    assert state.messages[-1].text == "Made 1 call:\n- word_count: 2"


@pytest.mark.parametrize(("said", "answer"), [
    ("Hello there.", "No calls asked for: "),
    ("call echo {not json}", "I could not read a call line: the arguments of echo are not JSON"),
    ('call echo {"text": "a"} call echo', "I could not read a call line: expected ' ; '"),
])
def test_no_call_line_or_one_it_cannot_read_is_answered_without_a_call(said, answer):
    step, state, _ = run(make_loop(named_script("calls")), State(messages=[Message.user(said)]))
    assert step == FinalOutput("end_turn")
    assert uses(state) == []
    assert state.messages[-1].text.startswith(answer)


def test_prose_that_starts_with_call_is_not_a_call_line():
    assert parse_line('call a {"k": "v ; call b"} ; call b') == [
        Call(tool="a", arguments={"k": "v ; call b"}), Call(tool="b", arguments={})]
    text = "call me maybe\ncall them tomorrow please\n  call docs__search {}"
    assert asked_calls(f"user: {text}") == ["call docs__search {}"]
    with pytest.raises(Unreadable):
        parse_line("call x [1, 2]")


def test_refused_and_offloaded_results_are_reported_as_they_came_back():
    fetch = Tool(name="fetch", description="A lot.", input_schema={"type": "object"},
                 fn=lambda args, ctx: "row of data\n" * 1_000)
    agent = make_agent(allowed_tools=["fetch", "echo", "read_file"])
    stack = default_stack(StackConfig(agent=agent, deps=RunDeps(
        files=MemoryFiles(), large_tool_result_chars=5_000)))
    loop = make_loop(named_script("calls"), agent=agent, middlewares=stack, tools=[fetch])
    said = 'call fetch {} ; call word_count {"text": "not allowed"}'
    step, state, _ = run(loop, State(messages=[Message.user(said)]))
    assert step == FinalOutput("end_turn")
    _, fetched, refused = state.messages[-1].text.splitlines()
    # offloaded: the pointer to the file, not the rows
    assert fetched.startswith("- fetch: The result was too long for the context (12000 ")
    assert refused.startswith("- word_count (error): ")


def test_after_compaction_the_summary_keeps_the_calls_and_the_run_makes_each_once():
    lines = "\n".join(f'call echo {{"text": "step {i}: {"padding " * 12}"}}' for i in range(30))
    provider = Recording(named_script("calls"))
    loop = make(provider, options=small(1_200, keep_messages=4), max_turns=60)
    step, state, _ = run(loop, State(messages=[Message.user(f"Echo these.\n{lines}")]))
    assert step == FinalOutput("end_turn")
    texts = [u.input["text"] for m in state.messages for u in m.tool_uses]
    assert [t.split(":")[0] for t in texts] == [f"step {i}" for i in range(30)]
    assert [u for batch in uses(state) for u, _ in batch] == [
        f"call_0_{i}_0" for i in range(30)]
    compacted = [r for r in provider.run_requests if is_summary(r.messages[0])]
    assert compacted and all(validate(r.messages) == [] for r in compacted)
    assert ASKED in compacted[-1].messages[0].text
    report = state.messages[-1].text.splitlines()
    assert report[0] == "Made 30 calls:" and report[-1].startswith("- echo: step 29: ")
    assert "- echo: (its result is only in the summary now)" in report


def test_a_summary_carries_the_last_users_call_lines_through_an_extension():
    transcript = ("user: Do this.\ncall a {}\ncall b {}\n\nassistant called a: {}\n"
                  "a result: done\ncall z {}\n\nuser: now these\ncall c {}")
    assert asked_calls(transcript) == ["call c {}"]  # a result's own lines are not asked for
    note = asked_note(transcript)
    assert note == f"\n{ASKED}\ncall c {{}}"
    extended = f"The summary so far:\n\nThe user said: \"x\".{note}\n\nWhat happened after it:"
    assert asked_calls(extended + "\n\nassistant called c: {}\nc result: ok") == ["call c {}"]
    assert asked_calls(extended + "\n\nuser: thanks, nothing more") == []


def test_scripted_calls_is_a_named_model():
    provider, name = resolve_provider("scripted:calls", ProviderSettings())
    assert isinstance(provider, ConversationScript) and name == "calls"
