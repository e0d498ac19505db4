"""What the context tests share: a session after one run of the demo model."""

from __future__ import annotations

import pytest


@pytest.fixture
def demo(alice, make_session, inline_runs) -> dict:
    """A session after one demo run: 1 the task, then tool calls paired with their results —
    2 → 3 and 4 → 5 (write_todos), 6 → 7 (word_count), 8 → 9 (write_todos) — and 10, the
    answer."""
    session = make_session(alice)
    response = alice.client.post(f"/v1/sessions/{session['id']}/messages",
                                 {"content": "count these four words"}, format="json")
    assert response.json()["run"]["status"] == "completed"
    return session
