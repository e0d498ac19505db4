"""Assertions over a session's stored history."""

from __future__ import annotations

from collections import Counter

from runs.models import Message


def assert_valid_history(session_id) -> list[Message]:
    """Seqs run 1..N with no gap; every tool_use is answered exactly once, in the next message;
    no tool_use id appears twice. Returns the messages."""
    messages = list(Message.objects.filter(session_id=session_id).order_by("seq"))
    assert [m.seq for m in messages] == list(range(1, len(messages) + 1))
    uses = [b["id"] for m in messages for b in m.content if b["type"] == "tool_use"]
    assert len(uses) == len(set(uses)), Counter(uses).most_common(3)
    for i, message in enumerate(messages):
        calls = [b["id"] for b in message.content if b["type"] == "tool_use"]
        if not calls:
            continue
        assert message.role == "assistant"
        following = messages[i + 1].content if i + 1 < len(messages) else []
        answered = [b["tool_use_id"] for b in following if b["type"] == "tool_result"]
        assert sorted(answered) == sorted(calls), (message.seq, calls, answered)
    return messages
