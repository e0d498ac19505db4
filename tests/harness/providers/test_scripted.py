"""harness.providers.scripted and the resolver: offline, deterministic, loud when misused."""

from __future__ import annotations

from dataclasses import replace

import pytest

from harness.errors import ScriptExhausted, UnknownModel
from harness.messages import (
    Message,
    Request,
    TextBlock,
    ToolDef,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
)
from harness.providers import resolve_provider, split_model
from harness.providers.base import Provider, ProviderSettings, StreamDone, Streaming
from harness.providers.scripted import (
    ConversationScript,
    ScriptedModel,
    named_script,
    text,
    tool_call,
)
from harness.state import State
from harness.steps import FinalOutput, Interrupted
from harness.tokens.base import ESTIMATE
from harness.tokens.tokenizers import tokenizer_for
from tests.support.harness import CancelAfter, make_loop, run


def request(question: str = "hi") -> Request:
    return Request(model="script", messages=(Message.user(question),))


def test_steps_play_in_order_and_calls_are_recorded():
    model = ScriptedModel([text("one"), tool_call("echo", {"text": "x"}, call_id="t1")])
    first, second = request("a"), request("b")
    assert model.complete(first).message.text == "one"
    assert model.remaining == 1
    response = model.complete(second)
    assert response.stop_reason == "tool_use"
    assert response.message.tool_uses == (ToolUseBlock(id="t1", name="echo", input={"text": "x"}),)
    assert model.calls == [first, second]
    assert model.remaining == 0
    assert isinstance(model, Provider)


def test_one_call_too_many_raises_script_exhausted_with_a_clear_message():
    model = ScriptedModel([text("only")])
    model.complete(request())
    with pytest.raises(ScriptExhausted) as caught:
        model.complete(request("again"))
    assert str(caught.value) == "the scripted model has 1 steps and was called 2 times"
    assert caught.value.code == "script_exhausted"
    assert len(model.calls) == 2  # the extra call is still recorded


def test_an_exception_step_is_raised_and_the_script_moves_on():
    boom = RuntimeError("boom")
    model = ScriptedModel([boom, text("after")])
    with pytest.raises(RuntimeError) as caught:
        model.complete(request())
    assert caught.value is boom
    assert model.complete(request()).message.text == "after"


def test_a_callable_step_answers_from_the_request():
    model = ScriptedModel([lambda req: text(f"you said {req.messages[-1].text}")])
    assert model.complete(request("ping")).message.text == "you said ping"


def test_usage_is_estimated_unless_the_step_gives_it():
    given = Usage(input_tokens=7, output_tokens=3)
    with_usage = text("x")
    with_usage = type(with_usage)(message=with_usage.message, stop_reason="end_turn", usage=given)
    model = ScriptedModel([text("estimated"), with_usage])
    estimated = model.complete(request()).usage
    assert estimated.input_tokens >= 1 and estimated.output_tokens >= 1
    assert model.complete(request()).usage == given


def test_the_estimate_follows_the_content_not_the_message_object():
    # Each message's length is kept per object: a copy, or the message given its seq once
    # stored, counts as the first did, and a longer history counts more.
    history = (Message.user("a question of some length"),
               Message(role="assistant", content=(TextBlock(text="an answer"),)))
    model = ScriptedModel([text("ok")] * 4)
    first = model.complete(Request(model="script", messages=history)).usage
    stored = tuple(replace(m, seq=n) for n, m in enumerate(history, start=1))
    assert model.complete(Request(model="script", messages=stored)).usage == first
    copied = tuple(Message(role=m.role, content=m.content) for m in history)
    assert model.complete(Request(model="script", messages=copied)).usage == first
    longer = (*history, Message.user("and one more question, longer than the first"))
    assert (model.complete(Request(model="script", messages=longer)).usage.input_tokens
            > first.input_tokens)


def a_full_request(model: str) -> Request:
    """A system prompt, tools, and a history with a call and its result: all of it is sent."""
    schema = {"type": "object", "properties": {"text": {"type": "string"}},
              "required": ["text"]}
    return Request(
        model=model, system=(TextBlock(text="You are a careful assistant. " * 20),),
        tools=(ToolDef(name="word_count", description="Count the words of a text.",
                       input_schema=schema),
               ToolDef(name="echo", description="Say the text back.", input_schema=schema)),
        messages=(Message.user("count these four words"),
                  Message(role="assistant", content=(
                      ToolUseBlock(id="d1_wc", name="word_count",
                                   input={"text": "count these four words"}),)),
                  Message(role="user", content=(
                      ToolResultBlock(tool_use_id="d1_wc", content="4"),))))


@pytest.mark.parametrize("model", [ScriptedModel([text("ok")] * 2), named_script("demo")],
                         ids=["steps", "demo"])
def test_input_tokens_are_the_inspectors_count_of_the_whole_request(model):
    # The context inspector counts a scripted:* request with its family's tokenizer: a Try of
    # the request it shows reports that same total, system prompt and tools included.
    request = a_full_request(model.model)
    usage = model.complete(request).usage
    assert usage.input_tokens == tokenizer_for(f"scripted:{model.model}").request(request)
    without_tools = replace(request, tools=())
    assert model.complete(without_tools).usage.input_tokens < usage.input_tokens


def test_a_growing_history_is_counted_by_its_new_messages(monkeypatch):
    # A run's next call repeats its history and adds to it: only the additions are counted,
    # and the usage is still the whole request's; a history that is not an extension is
    # counted whole.
    model = ScriptedModel([text("ok")] * 3)
    request = a_full_request(model.model)
    counted: list[Message] = []
    original = ESTIMATE.message
    monkeypatch.setattr(ESTIMATE, "message", lambda m: counted.append(m) or original(m))
    added = (Message(role="assistant", content=(TextBlock(text="It has 4 words."),)),
             Message.user("thanks"))
    for messages, new in [(request.messages, request.messages),
                          ((*request.messages, *added), added),
                          (added, added)]:
        sent = replace(request, messages=messages)
        counted.clear()
        response = model.complete(sent)
        assert counted == [*new, response.message]  # the answer: its output tokens
        assert response.usage.input_tokens == ESTIMATE.request(sent)


def test_step_builders():
    assert text("t").message.content == (TextBlock(text="t"),)
    assert text("t", stop_reason="max_tokens").stop_reason == "max_tokens"
    call = tool_call("echo", {"text": "x"}, preface="Let me.")
    assert call.message.text == "Let me."
    (use,) = call.message.tool_uses
    assert use.id.startswith("toolu_") and use.name == "echo"
    assert tool_call("echo", {}).message.tool_uses[0].id != use.id


def test_workload_4_alternates_echo_and_write_todos_then_answers():
    step, state, _ = run(make_loop(named_script("workload-4")))
    names = [u.name for m in state.messages for u in m.tool_uses]
    assert names == ["echo", "write_todos", "echo", "write_todos"]
    assert state.messages[-1].text == "All 4 steps done."
    assert step == FinalOutput("end_turn")
    assert state.turn == 5
    assert not any(r.is_error for m in state.messages for r in m.tool_results)


def test_named_scripts_are_deterministic():
    script = named_script("demo")
    assert isinstance(script, ConversationScript)
    req = Request(model="demo", messages=(Message.user("a b c"),),
                  tools=tuple(t.definition for t in make_loop(script).base_tools))
    assert script.complete(req) == script.complete(req)


@pytest.mark.parametrize("name", ["nope", "Demo", "workload-", "workload-x", "workload--1", ""])
def test_named_script_rejects_unknown_names(name):
    with pytest.raises(UnknownModel, match="scripted:demo"):
        named_script(name)


@pytest.mark.parametrize("model", ["foo:bar", "scripted", "scripted:", ":demo", "demo"])
def test_resolve_provider_rejects_unknown_models(model):
    with pytest.raises(UnknownModel):
        resolve_provider(model, ProviderSettings())


def test_resolve_provider_scripted():
    provider, name = resolve_provider("scripted:workload-3",
                                      ProviderSettings(scripted_delay_ms=5))
    assert name == "workload-3"
    assert isinstance(provider, ConversationScript)
    assert (provider.name, provider.model, provider.delay_ms) == ("scripted", "workload-3", 5)
    assert split_model("anthropic:claude-x") == ("anthropic", "claude-x")


def test_the_scripted_models_stream_word_by_word_then_the_whole_response():
    answer = text("You said:  \"hi\".\nAll done. ")
    events = list(ScriptedModel([answer]).stream(request()))
    *words, done = events
    assert [w.text for w in words] == ["You ", "said:  ", "\"hi\".\n", "All ", "done. "]
    assert done == StreamDone(response=ScriptedModel([answer]).complete(request()))
    assert isinstance(named_script("demo"), Streaming)
    *deltas, last = named_script("demo").stream(request("count these four words"))
    said = last.response.message.text  # no tool offered: the demo answers at once
    assert said.startswith("You said:") and "".join(d.text for d in deltas) == said


def test_a_tool_call_without_text_streams_only_its_response():
    events = list(ScriptedModel([tool_call("echo", {"text": "x"})]).stream(request()))
    assert [type(e) for e in events] == [StreamDone]


def test_word_delay_paces_the_words(monkeypatch):
    slept: list[float] = []
    monkeypatch.setattr("harness.providers.scripted.time.sleep", slept.append)
    list(ScriptedModel([text("one two three")], word_delay_ms=40).stream(request()))
    assert slept == [0.04, 0.04, 0.04]  # before each word, the first too
    provider, _ = resolve_provider("scripted:demo", ProviderSettings(scripted_word_delay_ms=7))
    assert isinstance(provider, ConversationScript) and provider.word_delay_ms == 7


@pytest.mark.parametrize("checks", range(1, 9))
def test_the_demo_after_a_cancel_and_resume_answers_as_its_plan_stands(checks):
    """Wherever a cancel lands, the resumed demo takes again the step it cut short: its final
    words (every step done, the words counted) agree with the stored plan."""
    loop = make_loop(named_script("demo"))
    state = State(messages=[Message.user("count these four words")])
    first, state, _ = run(loop, state, control=CancelAfter(checks))
    step, state, _ = run(loop, state)
    assert step == FinalOutput("end_turn")
    assert [t.status for t in state.todos] == ["completed"] * 3
    assert state.messages[-1].text == (
        'You said: "count these four words". It has 4 words. All planned steps are done.')
    assert first == Interrupted("cancelled")
    # Checks alternate: before the turn's one tool call (which it cuts short), then at the
    # next turn boundary.
    cut_short = any(r.is_error for m in state.messages for r in m.tool_results)
    assert cut_short == (checks % 2 == 1)
