"""The admin's readable pages: a session's messages as a transcript. Pages are read as a staff
user through Django's test client."""

from __future__ import annotations

import re
from itertools import cycle

import pytest
from django.urls import reverse
from django.utils.html import escape

from runs import admin_display
from runs.admin_display import fold, pretty_json
from runs.models import Message, Run, Session

SCRIPT = "<script>alert(1)</script>"
LONG = "\n".join(f"line {i}" for i in range(1, 41))


def page(client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200
    return response.content.decode()


def session_page(client, session: Session) -> str:
    return page(client, reverse("admin:runs_session_change", args=[session.pk]))


def assert_escaped(html: str) -> None:
    assert SCRIPT not in html and escape(SCRIPT) in html


@pytest.fixture
def finished(alice, make_session, inline_runs) -> Run:
    """A run of the demo model that planned, counted words with a tool and answered; the user's
    text holds a script."""
    session = make_session(alice)
    response = alice.client.post(f"/v1/sessions/{session['id']}/messages",
                                 {"content": f"count these words {SCRIPT}"}, format="json")
    assert response.status_code == 202 and response.json()["run"]["status"] == "completed"
    return Run.objects.get(pk=response.json()["run"]["id"])


@pytest.fixture
def session(alice, make_session) -> Session:
    """A session without messages: the test writes them."""
    return Session.objects.get(pk=make_session(alice)["id"])


def add_message(session: Session, seq: int, role: str, *blocks: dict) -> Message:
    return Message.objects.create(session=session, seq=seq, role=role, content=list(blocks))


# -- folding ----------------------------------------------------------------------------------

def test_short_text_is_not_folded():
    assert fold("two\nlines") == admin_display.Folded(head="two\nlines")


def test_long_text_shows_its_first_lines_and_folds_the_rest():
    folded = fold(LONG)
    assert folded.head == "\n".join(f"line {i}" for i in range(1, 9))
    assert f"{folded.head}\n{folded.rest}" == LONG
    assert folded.more == "32 more lines"


def test_one_long_line_is_folded_by_characters():
    text = "x" * 5_000
    folded = fold(text)
    assert folded.head + folded.rest == text
    assert len(folded.head) == admin_display.PREVIEW_CHARS
    assert folded.more == "4,200 more characters"


# -- a session's page -------------------------------------------------------------------------

def test_a_session_page_shows_its_messages_as_a_transcript(staff_client, finished):
    html = session_page(staff_client, finished.session)
    transcript = html[html.index('class="hango-transcript"'):]
    headings = re.findall(r">#(\d+)</a> <strong>(\w+)</strong>", transcript)
    assert headings == list(zip(map(str, range(1, 11)), cycle(["user", "assistant"])))
    assert "count these words" in transcript and "Let me plan this." in transcript
    # a tool call with its name and its arguments, pretty-printed; its result, named
    assert "tool call <code>word_count</code>" in transcript
    assert escape(pretty_json({"text": f"count these words {SCRIPT}"})) in transcript
    assert "result of <code>word_count</code>" in transcript
    assert "Todo list updated: 0/3 completed." in transcript
    assert "All planned steps are done." in transcript
    assert '[{"type": "text"' not in html  # no raw content blocks
    assert_escaped(html)


def test_long_content_is_folded_and_errors_are_marked(staff_client, session):
    add_message(session, 1, "user", {"type": "text", "text": LONG})
    add_message(session, 2, "assistant",
                {"type": "tool_use", "id": "c1", "name": f"tool{SCRIPT}", "input": {"q": SCRIPT}})
    add_message(session, 3, "user", {"type": "tool_result", "tool_use_id": "c1",
                                     "content": f"failed: {SCRIPT}", "is_error": True})
    add_message(session, 4, "assistant", {"type": "image", "data": SCRIPT})  # not a block
    html = session_page(staff_client, session)
    head = "\n".join(f"line {i}" for i in range(1, 9))
    assert (f'<details class="hango-fold"><summary><span class="hango-pre">{head}</span>'
            '<span class="hango-more">… 32 more lines</span></summary>') in html
    rest = LONG.split("line 8\n", 1)[1]
    assert f'<div class="hango-pre">{rest}</div></details>' in html
    assert '<div class="hango-block hango-tool_result hango-error">' in html
    assert f"<strong>error</strong> from <code>tool{escape(SCRIPT)}</code>" in html
    assert "not content blocks: as stored" in html
    assert_escaped(html)


def test_a_long_session_shows_its_last_messages_in_one_query(staff_client, session, alice,
                                                             make_session, monkeypatch,
                                                             django_assert_num_queries):
    monkeypatch.setattr(admin_display, "MESSAGES_SHOWN", 3)
    for seq in range(1, 6):
        add_message(session, seq, "user", {"type": "text", "text": f"message {seq}"})
    other = Session.objects.get(pk=make_session(alice)["id"])
    add_message(other, 1, "user", {"type": "text", "text": "elsewhere"})
    with django_assert_num_queries(1):
        transcript = admin_display.transcript(session)
    assert re.findall(r">#(\d+)</a>", transcript) == ["3", "4", "5"]
    assert "Showing the last 3 of 5 messages" in transcript
    link = re.search(r'<a href="([^"]+)">the message list</a>', transcript)
    listed = page(staff_client, link.group(1).replace("&amp;", "&"))
    assert "5 messages" in listed  # the session's, not the other's


def test_a_message_page_shows_it_readably_beside_its_stored_content(staff_client, session):
    message = add_message(session, 1, "user", {"type": "text", "text": SCRIPT})
    html = page(staff_client, reverse("admin:runs_message_change", args=[message.pk]))
    assert f'<div class="hango-pre">{escape(SCRIPT)}</div>' in html
    assert_escaped(html)
