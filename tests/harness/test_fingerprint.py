"""harness.fingerprint: a sent request printed part by part, stored in a few bytes (whole, or as
the edit of the call before) and read back."""

from __future__ import annotations

from dataclasses import replace

from harness import fingerprint
from harness.deps import StackConfig
from harness.inspect import inspect
from harness.messages import Message, PartPrint, RequestPrint
from harness.providers.scripted import ScriptedModel, text, tool_call
from harness.stack import default_stack
from harness.state import State
from harness.tokens.base import ESTIMATE
from tests.support.harness import make_agent, make_loop, run

P = PartPrint


def printed(*parts: tuple[str, int, int], cached: int = 0) -> RequestPrint:
    return RequestPrint(parts=tuple(P(*p) for p in parts), cached=cached)


BASE = printed(("tool:echo", 1, 30), ("system:agent", 2, 100), ("system:todo", 3, 5),
               ("message:1", 4, 10), ("message:2", 5, 20), cached=2)


def test_a_print_reads_back_whole_and_as_an_edit():
    later = printed(*[tuple(p) for p in BASE.parts[:2]], ("system:todo", 9, 7),
                    *[tuple(p) for p in BASE.parts[3:]], ("message:3", 6, 40),
                    ("message:4", 7, 50), cached=2)
    whole = fingerprint.encode(BASE)
    edit = fingerprint.encode(later, BASE)
    assert fingerprint.decode(whole) == BASE
    assert fingerprint.decode(edit, BASE) == later
    assert fingerprint.decode_run([whole, edit]) == [BASE, later]
    assert fingerprint.is_whole(whole) and not fingerprint.is_whole(edit)
    # Two runs copied, three parts new: a few bytes each, not a part per message.
    assert len(edit) < 40 < len(whole)


def test_part_ids_of_every_kind_survive_storage():
    odd = printed(("system:memory:/memories/AGENTS.md", 1, 3), ("summary", 2, 4),
                  ("repair:1", 3, 5), ("message:007", 4, 6), ("queued:x", 5, 7),
                  ("tool:é", 2**32 - 1, 2**20))
    assert fingerprint.decode(fingerprint.encode(odd)) == odd


def test_the_loop_prints_what_it_sends_as_the_inspector_prints_the_next_call():
    """One assembly: the print a run's call stores is the print of the request the inspector
    showed for that call just before it."""
    agent = make_agent()
    model = ScriptedModel([tool_call("echo", {"text": "hi"}), text("done")])
    loop = make_loop(model, agent=agent, prints=ESTIMATE,
                     middlewares=default_stack(StackConfig(agent=agent)))
    state = State(messages=[replace(Message.user("Please help."), seq=1)])
    shown = fingerprint.of_request(inspect(loop, state, ESTIMATE).request, ESTIMATE)
    _, _, recorder = run(loop, state)
    sent = [u.sent for result in recorder.results for u in result.usage]
    assert sent[0] == shown
    assert [p.part for p in sent[0].parts if p.part.startswith("message:")] == ["message:1"]
    assert sent[0].cached_tokens == sum(p.tokens for p in sent[0].parts[:sent[0].cached])
    assert len(sent) == 2 and all(s is not None for s in sent)


def test_a_loop_without_a_tokenizer_prints_nothing():
    _, _, recorder = run(make_loop(ScriptedModel([text("done")])))
    assert [u.sent for result in recorder.results for u in result.usage] == [None]
