"""harness.context: part ids, override sets, and what an override does to a history."""

from __future__ import annotations

from dataclasses import replace

import pytest

from harness import context
from harness.context import Override, OverrideSet
from harness.errors import InvalidContent
from harness.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from harness.state import State, state_from_json, state_to_json


def stored(*messages: Message) -> list[Message]:
    return [replace(m, seq=i) for i, m in enumerate(messages, start=1)]


HISTORY = stored(
    Message.user("Count the words."),
    Message(role="assistant", content=(TextBlock(text="Counting."),
                                       ToolUseBlock(id="c1", name="word_count",
                                                    input={"text": "a b"}))),
    Message(role="user", content=(ToolResultBlock(tool_use_id="c1", content="2"),)),
    Message(role="assistant", content=(TextBlock(text="Two words."),)),
    Message.user("Thanks."),
)


@pytest.mark.parametrize(("part", "kind"), [
    ("system:agent", "system"), ("system:memory:/memories/AGENTS.md", "system"),
    ("tool:read_file", "tool"), ("message:42", "message"), ("summary", "summary"),
    ("system:", None), ("tool:", None), ("message:0", None), ("message:007", None),
    ("message:x", None), ("message:٣", None), ("repair:1", None), ("", None),
])
def test_part_kinds(part, kind):
    assert context.part_kind(part) == kind


def test_an_override_has_a_replacement_exactly_when_it_replaces():
    Override(part="system:agent", action="replace", replacement="")
    with pytest.raises(ValueError):
        Override(part="system:agent", action="replace")
    with pytest.raises(ValueError):
        Override(part="system:agent", action="exclude", replacement="x")
    with pytest.raises(ValueError):
        Override(part="system:agent", action="hide")  # type: ignore[arg-type]


def test_a_set_looks_up_by_part_merges_and_survives_the_checkpoint():
    overrides = OverrideSet(overrides=(Override(part="tool:echo", action="exclude"),
                                       Override(part="message:2", action="exclude")))
    assert overrides.excluded_tools == {"echo"} and len(overrides) == 2
    merged = overrides.merged([Override(part="message:2", action="replace", replacement="r")])
    assert merged.get("message:2").action == "replace" and len(merged) == 2
    state = State(turn=3)
    context.set_active(state, merged)
    restored = state_from_json(state_to_json(state), turn=3)
    assert context.active(restored) == merged
    assert context.active(State()) == OverrideSet()
    with pytest.raises(InvalidContent):
        OverrideSet.from_json({"overrides": [{"part": "x"}]})


def test_excluding_or_replacing_messages():
    overrides = OverrideSet(overrides=(
        Override(part="message:1", action="replace", replacement="Count them, please."),
        Override(part="message:4", action="exclude")))
    kept, excluded = context.apply_messages(HISTORY, overrides)
    assert [m.seq for m in kept] == [1, 2, 3, 5] and excluded == [HISTORY[3]]
    assert kept[0].text == "Count them, please." and kept[0].seq == 1
    assert HISTORY[0].text == "Count the words."  # the stored history is never changed


def test_a_replaced_message_keeps_its_tool_blocks():
    replaced = context.replace_text(HISTORY[1], "Let me count.")
    assert replaced.text == "Let me count." and replaced.tool_uses == HISTORY[1].tool_uses
    only_results = context.replace_text(HISTORY[2], "note")
    assert only_results.tool_results == HISTORY[2].tool_results and only_results.text == "note"


def test_a_call_and_its_results_go_together():
    assert context.pairs(HISTORY) == {"message:2": ["message:3"], "message:3": ["message:2"]}
    assert context.with_partners(["message:3"], HISTORY) == ["message:2"]
    assert context.with_partners(["message:2", "message:3"], HISTORY) == []
    assert context.with_partners(["message:5"], HISTORY) == []
