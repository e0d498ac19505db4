"""Loading a session's history: the context inspector's reads share the decoded messages, a
run's do not, and both give the same messages."""

from __future__ import annotations

import pytest

from harness.messages import TextBlock, ToolUseBlock
from runs.execution import SHARED_CONTENT_CHARS, session_history
from runs.models import Message, Session

pytestmark = pytest.mark.django_db

LONG = "x" * (SHARED_CONTENT_CHARS + 1)


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
    # A message past the bound is decoded anew each time, shared or not.
    assert shared[2] is not shared_again[2]
