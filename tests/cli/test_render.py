"""cli.render: a run's events as a person reads them; streamed text is never printed twice."""

from __future__ import annotations

from typing import Any

import pytest

from cli.follow import Event
from cli.render import Renderer


def event(kind: str, at: int | None = None, **data: Any) -> Event:
    """An event of type ``kind`` with ``data``; ``at`` is its seq (None: live only)."""
    return Event(type=kind, data=data, seq=at, raw={"type": kind, "data": data})


_counts: dict[int, int] = {}


@pytest.fixture(autouse=True)
def _fresh_counts():
    _counts.clear()


def delta(text: str, turn: int = 1, index: int | None = None) -> Event:
    """A live delta; ``index`` counts the turn's deltas from 0 unless given."""
    if index is None:
        index = _counts[turn] = _counts.get(turn, -1) + 1
    return event("message.delta", run="r", turn=turn, index=index, text=text)


def created(role: str, content: list | None, seq: int = 2, **extra: Any) -> Event:
    data = {"id": f"m{seq}", "seq": seq, "role": role, **extra}
    if content is not None:
        data["content"] = content
    return event("message.created", at=seq, **data)


TEXT = [{"type": "text", "text": "Counting your words now."}]
CALL = [{"type": "text", "text": "Let me count."},
        {"type": "tool_use", "id": "t1", "name": "word_count", "input": {"text": "a b"}}]
RESULT = [{"type": "tool_result", "tool_use_id": "t1", "content": "2", "is_error": False}]


def render(events: list[Event], messages: dict[str, list] | None = None) -> list[str]:
    """Render ``events``; the ids of the messages the renderer had to read."""
    asked: list[str] = []

    def lookup(message_id: str) -> list | None:
        asked.append(message_id)
        return (messages or {}).get(message_id)

    renderer = Renderer(lookup)
    for e in events:
        renderer.event(e)
    renderer.end_line()
    return asked


def test_streamed_text_then_its_message_prints_the_text_once(capsys):
    render([delta("Counting "), delta("your "), delta("words"), created("assistant", TEXT)])
    assert capsys.readouterr().out == "Counting your words now.\n"


def test_a_message_without_deltas_prints_its_text_and_tool_calls(capsys):
    render([created("assistant", CALL), created("user", RESULT, seq=3)])
    assert capsys.readouterr().out.splitlines() == [
        "Let me count.", '→ word_count {"text": "a b"}', "← word_count: 2"]


def test_an_event_without_content_reads_the_message(capsys):
    asked = render([created("assistant", None, seq=4)], {"m4": TEXT})
    assert asked == ["m4"]
    assert capsys.readouterr().out == "Counting your words now.\n"


def test_deltas_are_matched_to_their_turns_message(capsys):
    # Turn 2's deltas arrive before turn 1's message is committed and sent.
    render([delta("Let me ", turn=1), delta("Count", turn=2), created("assistant", CALL, turn=1),
            delta("ing your words now.", turn=2), created("assistant", TEXT, seq=5, turn=2)])
    # Interleaved as they came (a turn's text on a line of its own), but each turn's text
    # printed once: "Let me " + "count." and "Count" + "ing your words now.".
    assert capsys.readouterr().out == (
        'Let me \nCount\ncount.\n→ word_count {"text": "a b"}\ning your words now.\n')


def test_a_message_naming_no_turn_takes_the_oldest_streamed_text(capsys):
    render([delta("Let me "), created("assistant", CALL)])
    assert capsys.readouterr().out.splitlines()[0] == "Let me count."


def test_a_stream_that_differs_from_the_stored_message_shows_the_stored_one(capsys):
    render([delta("Something else"), created("assistant", TEXT)])
    out = capsys.readouterr().out
    assert "the stored message differs" in out
    assert out.rstrip().endswith("Counting your words now.")


def test_deltas_of_a_turn_that_never_landed_are_not_matched_later(capsys):
    render([delta("Half a thought"), event("run.status", status="cancelled"),
            created("assistant", TEXT)])
    out = capsys.readouterr().out
    assert "differs" not in out
    assert out.splitlines() == ["Half a thought", "Counting your words now."]


def test_todos_write_todos_and_errors(capsys):
    plan = [{"content": "Read", "status": "completed"}, {"content": "Count", "status":
                                                          "in_progress"},
            {"content": "Answer", "status": "pending"}]
    call = [{"type": "tool_use", "id": "w", "name": "write_todos", "input": {"todos": plan}}]
    failed = [{"type": "tool_result", "tool_use_id": "w", "content": "x" * 500,
               "is_error": True}]
    render([created("assistant", call), event("todos.updated", todos=plan),
            event("tool.result", tool_use_id="w", name="write_todos", is_error=True),
            created("user", failed, seq=3)])
    lines = capsys.readouterr().out.splitlines()
    assert lines[:5] == ["→ write_todos", "todos (1/3 done)", "  [x] Read", "  [>] Count",
                         "  [ ] Answer"]
    assert lines[5].startswith("← write_todos failed: xxx") and lines[5].endswith("…")
    assert len(lines) == 6


def test_a_model_call_streaming_again_from_its_first_delta_is_compared_anew(capsys):
    render([delta("Counting my", index=0), delta(" wor", index=1),
            delta("Counting ", index=0), delta("your words now.", index=1),
            created("assistant", TEXT)])
    assert capsys.readouterr().out.splitlines() == [
        "Counting my wor", "[the model call was tried again]", "Counting your words now."]


def test_a_call_sent_again_from_its_first_delta_is_not_printed_again(capsys):
    # A stream that reconnected mid-call starts again with the call's deltas so far.
    render([delta("Counting ", index=0), delta("your ", index=1),
            delta("Counting ", index=0), delta("your ", index=1), delta("words now.", index=2),
            created("assistant", TEXT)])
    assert capsys.readouterr().out == "Counting your words now.\n"


def test_deltas_that_miss_the_start_of_their_call_are_not_printed(capsys):
    # A stream that opened after the call's first delta: what came would print the text
    # without its first word; the stored message prints it whole.
    render([delta("your ", index=1), delta("words ", index=2), created("assistant", TEXT)])
    assert capsys.readouterr().out == "Counting your words now.\n"


def test_after_a_missed_delta_the_stored_message_finishes_the_text(capsys):
    render([delta("Counting ", index=0), delta("your ", index=1), delta("now.", index=3),
            delta("your ", index=1), created("assistant", TEXT)])
    assert capsys.readouterr().out == "Counting your words now.\n"


def test_a_later_turns_deltas_before_earlier_messages_are_kept_for_their_own(capsys):
    # As a stream may send them: turn 5's answer starts streaming before the events of the
    # turns before it (which name no turn, and turn 2's has no text) reach the follower.
    answer = [{"type": "text", "text": "It has 3 words."}]
    render([delta("Let me ", turn=1), delta("count.", turn=1), delta("It has ", turn=5),
            created("assistant", CALL, seq=2), created("user", RESULT, seq=3),
            created("assistant", [{"type": "tool_use", "id": "w", "name": "write_todos",
                                   "input": {}}], seq=4),
            delta("3 words.", turn=5), created("assistant", answer, seq=6)])
    assert capsys.readouterr().out.splitlines() == [
        "Let me count.", "It has ", '→ word_count {"text": "a b"}', "← word_count: 2",
        "→ write_todos", "3 words."]
