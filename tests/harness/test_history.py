"""harness.history: what a valid request history is, and where it may be cut."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.history import (
    SUMMARY_PREFIX,
    is_summary,
    safe_cut,
    summary_message,
    tool_pairs,
    validate,
)
from harness.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock


def user(text: str = "hi", seq: int | None = None) -> Message:
    return Message(role="user", content=(TextBlock(text=text),), seq=seq)


def says(text: str = "ok") -> Message:
    return Message(role="assistant", content=(TextBlock(text=text),))


def calls(*ids: str, preface: str = "") -> Message:
    blocks = ((TextBlock(text=preface),) if preface else ()) + tuple(
        ToolUseBlock(id=i, name="echo", input={"text": i}) for i in ids)
    return Message(role="assistant", content=blocks)


def results(*ids: str, text: str = "") -> Message:
    blocks = tuple(ToolResultBlock(tool_use_id=i, content=f"result {i}") for i in ids)
    return Message(role="user", content=blocks + ((TextBlock(text=text),) if text else ()))


def kinds(messages) -> list[str]:
    return [p.kind for p in validate(messages)]


# -- validate ----------------------------------------------------------------------------------


def test_a_normal_agent_history_is_valid():
    history = [user("do it"), calls("a", "b", preface="on it"), results("a", "b"), calls("c"),
               results("c", text="and also this"), says("done"), user("thanks"), user("again")]
    assert validate(history) == []


@pytest.mark.parametrize(("history", "expected"), [
    ([], ["empty_history"]),
    ([says()], ["starts_with_assistant"]),
    ([results("a"), says()], ["starts_with_tool_results"]),
    ([user(), calls("a")], ["unanswered_tool_use"]),
    ([user(), calls("a", "b"), results("a")], ["unanswered_tool_use"]),
    ([user(), calls("a"), says()], ["unanswered_tool_use"]),
    ([user(), calls("a"), user("no results")], ["unanswered_tool_use"]),
    ([user(), says(), results("a")], ["orphan_tool_result"]),
    ([user(), calls("a"), results("a"), results("a")], ["orphan_tool_result"]),
    ([user(), calls("a"), Message(role="user", content=results("a").content * 2)],
     ["duplicate_tool_result"]),
    ([user(), Message(role="assistant", content=())], ["empty_message"]),
    ([Message(role="user", content=calls("a").content)], ["misplaced_block"]),
])
def test_every_kind_of_problem_is_reported(history, expected):
    assert kinds(history) == expected


def test_problems_say_where_and_what():
    (problem,) = validate([user(), calls("toolu_1"), says()])
    assert problem.index == 1
    assert "toolu_1" in str(problem) and "message 1" in str(problem)


# -- safe_cut ----------------------------------------------------------------------------------


HISTORY = [user("task"), calls("a"), results("a"), calls("b"), results("b"), says("half way"),
           user("more"), calls("c"), results("c"), says("done")]


@pytest.mark.parametrize(("keep", "cut"), [
    (1, 9),   # the final answer alone
    (2, 7),   # would open with c's results: moves back to keep the call
    (3, 7),
    (4, 6),   # opens with the user's text
    (5, 5),   # opens with an assistant text: fine after a summary
    (6, 3),   # b's results: back to the call
    (8, 1),
    (9, 1),
    (10, 0),  # everything: nothing to cut
    (50, 0),
])
def test_safe_cut_keeps_at_least_keep_last_and_never_splits_a_pair(keep, cut):
    assert safe_cut(HISTORY, keep) == cut
    assert len(HISTORY) - cut >= min(keep, len(HISTORY))
    assert validate([summary_message("…"), *HISTORY[cut:]]) == []


def test_safe_cut_rejects_keeping_nothing():
    with pytest.raises(ValueError):
        safe_cut(HISTORY, 0)


def test_tool_pairs_lists_the_messages_kept_or_dropped_together():
    assert tool_pairs(HISTORY) == [(1, 2), (3, 4), (7, 8)]


def test_the_summary_message_is_identifiable():
    summary = summary_message("the user wants a report")
    assert summary.role == "user" and summary.seq is None
    assert summary.text == f"{SUMMARY_PREFIX} the user wants a report"
    assert is_summary(summary)
    assert not is_summary(user(f"{SUMMARY_PREFIX} typed by a user", seq=4))
    assert not is_summary(user("hello"))


# -- property: any valid history, any cut -> a valid request -----------------------------------


@st.composite
def histories(draw) -> list[Message]:
    """Random valid histories: user texts, assistant texts, assistant tool calls answered by a
    user message of results (sometimes with text after them)."""
    messages = [user(draw(st.text(min_size=1, max_size=8)))]
    next_id = 0
    for _ in range(draw(st.integers(min_value=0, max_value=30))):
        match draw(st.sampled_from(["user", "assistant", "calls"])):
            case "user":
                messages.append(user(draw(st.text(min_size=1, max_size=8))))
            case "assistant":
                messages.append(says(draw(st.text(min_size=1, max_size=8))))
            case "calls":
                n = draw(st.integers(min_value=1, max_value=3))
                ids = [f"t{next_id + k}" for k in range(n)]
                next_id += n
                preface = draw(st.sampled_from(["", "let me look"]))
                messages.append(calls(*ids, preface=preface))
                answered = draw(st.permutations(ids))
                messages.append(results(*answered, text=draw(st.sampled_from(["", "also"]))))
    return messages


@settings(max_examples=300, deadline=None, database=None)
@given(history=histories(), data=st.data())
def test_any_history_cut_anywhere_gives_a_valid_request(history, data):
    assert validate(history) == []
    keep = data.draw(st.integers(min_value=1, max_value=len(history) + 2))
    cut = safe_cut(history, keep)
    kept = history[cut:]
    assert kept, "something is always kept"
    assert min(keep, len(history)) <= len(kept) <= keep + 1
    assert validate([summary_message("earlier"), *kept]) == []
    # Without a summary the tail is valid whenever it opens with a user message.
    if kept[0].role == "user":
        assert validate(kept) == []
