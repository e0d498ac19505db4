"""Loading a session's history: the context inspector's reads share the decoded messages, a
run's do not, and both give the same messages."""

from __future__ import annotations

import json
import sys
import tracemalloc

import pytest

from harness.messages import TextBlock, ToolUseBlock
from runs.execution import history as stored
from runs.execution.history import SHARED_ROW_BYTES, session_history, weight
from runs.models import Message, Session

LONG = "x" * SHARED_ROW_BYTES  # past the weight a shared row may have


@pytest.fixture
def history(alice, make_session):
    session = Session.objects.get(pk=make_session(alice)["id"])
    Message.objects.bulk_create([
        Message(session=session, seq=1, role="user", content=[{"type": "text", "text": "hi"}]),
        Message(session=session, seq=2, role="assistant", content=[
            {"type": "tool_use", "id": "c1", "name": "echo", "input": {"text": "hi"}}]),
        Message(session=session, seq=3, role="user", content=[
            {"type": "tool_result", "tool_use_id": "c1", "content": LONG, "is_error": False}]),
    ])
    return session


@pytest.mark.django_db
def test_the_inspectors_reads_share_short_messages_and_a_runs_reads_do_not(history):
    fresh, again = session_history(history.pk), session_history(history.pk)
    shared, shared_again = (session_history(history.pk, reuse_decoded=True),
                            session_history(history.pk, reuse_decoded=True))
    assert fresh == again == shared == shared_again
    assert [m.seq for m in shared] == [1, 2, 3]
    assert shared[1].content[0] == ToolUseBlock(id="c1", name="echo", input={"text": "hi"})
    assert shared[0].content == (TextBlock(text="hi"),)
    # Short messages: the same objects on every shared read; never on a run's.
    assert shared[1] is shared_again[1] and shared[0] is shared_again[0]
    assert fresh[1] is not again[1] and fresh[1].content[0].input is not again[1].content[0].input
    # A message heavier than the bound is decoded anew each time, shared or not.
    assert shared[2] is not shared_again[2]


WIDE = {
    "ascii": [{"type": "text", "text": "a" * 2_000}],
    "astral": [{"type": "text", "text": "😀" * 2_000}],
    "one astral character widens the whole text": [{"type": "text", "text": "a" * 8_000 + "😀"}],
    "cjk": [{"type": "text", "text": "中" * 2_700}],
    "empty objects": [{"type": "tool_use", "id": "c1", "name": "e", "input": {"x": [{}] * 1_300}}],
    "empty arrays": [{"type": "tool_use", "id": "c1", "name": "e", "input": {"x": [[]] * 2_700}}],
    "short": [{"type": "text", "text": "hi"}],
}


@pytest.mark.parametrize("content", WIDE.values(), ids=WIDE.keys())
def test_a_shared_rows_weight_bounds_the_memory_it_holds(content):
    text = json.dumps(content, ensure_ascii=False, separators=(",", ":"))
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        message = stored._message(1, "user", text)
        held = tracemalloc.get_traced_memory()[0] - before + sys.getsizeof(text)
    finally:
        tracemalloc.stop()
    assert message.content  # decoded, and alive while measured
    assert held <= weight(text)
