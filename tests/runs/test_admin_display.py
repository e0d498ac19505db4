"""The admin's readable pages: a session's messages as a transcript; a run's todos, usage and
events. Pages are read as a staff user through Django's test client."""

from __future__ import annotations

import re
from decimal import Decimal
from itertools import cycle

import pytest
from django.urls import reverse
from django.utils.html import escape

from accounts.models import UsageRecord
from accounts.prices import Price, stored
from accounts.usage import money
from runs import admin_display
from runs.admin_display import event_summary, fold, pretty_json
from runs.intake.selectors import run_calls
from runs.models import Message, Run, RunEvent, RunStatus, Session

SCRIPT = "<script>alert(1)</script>"
LONG = "\n".join(f"line {i}" for i in range(1, 41))


def page(client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200
    return response.content.decode()


def session_page(client, session: Session) -> str:
    return page(client, reverse("admin:runs_session_change", args=[session.pk]))


def run_page(client, run: Run) -> str:
    return page(client, reverse("admin:runs_run_change", args=[run.pk]))


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


# -- folding and summaries --------------------------------------------------------------------

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


@pytest.mark.parametrize(("event_type", "data", "summary"), [
    ("run.status", {"status": "running", "turn": 2}, "running at turn 2"),
    ("run.status", {"status": "failed", "turn": 3,
                    "error": {"code": "provider_error", "message": "down"}},
     "failed at turn 3: provider_error: down"),
    ("message.created", {"id": "m", "seq": 4, "role": "assistant"}, "message #4 (assistant)"),
    ("tool.result", {"tool_use_id": "t", "name": "read_file", "is_error": True},
     "read_file: error"),
    ("todos.updated", {"todos": [{"content": "a", "status": "completed"},
                                 {"content": "b", "status": "pending"}]},
     "todos: 1 of 2 completed"),
    ("approval.requested", {"pending": [{"tool_use_id": "t", "name": "delete_file",
                                         "allowed_decisions": ["approve"]}]},
     "waiting for a decision on delete_file"),
    ("something.new", {"k": 1}, '{"k": 1}'),
    ("run.status", {"unexpected": True}, '{"unexpected": true}'),  # not its shape: as stored
])
def test_each_event_type_has_a_one_line_summary(event_type, data, summary):
    assert event_summary(RunEvent(type=event_type, data=data)) == summary


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
    assert '<link href="/static/runs/admin.css"' in html
    assert staff_client.get("/static/runs/admin.css").status_code == 200
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


# -- a run's page -----------------------------------------------------------------------------

def test_a_run_page_shows_its_todos_usage_and_events(staff_client, finished):
    html = run_page(staff_client, finished)
    assert "3 of 3 completed" in html
    for todo in ("Read the request", "Count its words", "Write the answer"):
        assert f'<span class="hango-status">completed</span> {todo}</li>' in html
    total = (finished.input_tokens + finished.output_tokens + finished.cache_read_tokens
             + finished.cache_write_tokens)
    assert total > 0
    assert (f"<tr><td>run · scripted:demo</td><td>5</td><td>{finished.input_tokens:,}</td>"
            f"<td>{finished.output_tokens:,}</td><td>0</td><td>0</td><td>{total:,}</td></tr>"
            ) in html
    events = html[html.index('class="hango-events"'):]
    summaries = re.findall(r"<summary>(.*?)</summary>", events)
    assert len(summaries) == finished.events.count()
    assert summaries[0] == "queued at turn 0" and summaries[-1] == "completed at turn 5"
    assert "word_count: ok" in summaries and "message #10 (assistant)" in summaries
    assert "todos: 3 of 3 completed" in summaries
    assert "<code>tool.result</code>" in events
    assert "State json" not in html  # the checkpoint is not shown as one blob


def test_a_long_run_shows_its_last_events_in_one_query(staff_client, finished, alice,
                                                       make_session, monkeypatch,
                                                       django_assert_num_queries):
    monkeypatch.setattr(admin_display, "EVENTS_SHOWN", 3)
    with django_assert_num_queries(1):
        log = admin_display.event_log(finished)
    count = finished.events.count()
    seqs = re.findall(r"<tr>\s*<td>(\d+)</td>", log)
    assert seqs == [str(n) for n in range(count - 2, count + 1)]
    assert f"Showing the last 3 of {count} events" in log
    other = make_session(alice)  # and another run, whose events the link leaves out
    alice.client.post(f"/v1/sessions/{other['id']}/messages", {"content": "hi"}, format="json")
    assert RunEvent.objects.count() > count
    link = re.search(r'<a href="([^"]+)">the event list</a>', log)
    assert f"{count} run events" in page(staff_client, link.group(1))


def test_the_event_list_pages_through_all_of_a_runs_events(staff_client, finished,
                                                             monkeypatch):
    monkeypatch.setattr(admin_display, "EVENTS_SHOWN", 3)
    RunEvent.objects.create(run=finished, seq=99, type="custom", data={"note": SCRIPT})
    url = reverse("admin:runs_run_events", args=[finished.pk])
    count = finished.events.count()
    seen = []
    for number in range(1, -(-count // 3) + 1):
        html = page(staff_client, f"{url}?page={number}")
        assert f"{count} run events" in html and f"page {number} of" in html
        seen += [int(seq) for seq in re.findall(r"<tr>\s*<td>(\d+)</td>", html)]
    assert seen == list(finished.events.order_by("seq").values_list("seq", flat=True))
    assert_escaped(html)  # the last page holds the event written above


def test_the_event_list_of_no_run_goes_back_to_the_runs(staff_client):
    response = staff_client.get(reverse("admin:runs_run_events",
                                        args=["00000000-0000-7000-8000-000000000000"]))
    assert response.status_code == 302
    assert response.url == reverse("admin:runs_run_changelist")


def test_a_run_page_escapes_what_users_and_models_wrote(staff_client, queued_run):
    Run.objects.filter(pk=queued_run.pk).update(
        status=RunStatus.FAILED, error={"code": "boom", "message": SCRIPT},
        state_json={"version": 1, "todos": [{"content": SCRIPT, "status": "in_progress"}],
                    "private": {"note": SCRIPT}})
    RunEvent.objects.create(run=queued_run, seq=99, type="custom", data={"note": SCRIPT})
    html = run_page(staff_client, queued_run)
    assert f'<span class="hango-status">in progress</span> {escape(SCRIPT)}</li>' in html
    assert f"boom: {escape(SCRIPT)}" in html
    assert_escaped(html)


def test_the_run_actions_still_cancel_and_resume(staff_client, queued_run):
    changelist = reverse("admin:runs_run_changelist")
    for action, status in (("cancel_runs", "cancelled"), ("resume_runs", "queued")):
        response = staff_client.post(changelist, {"action": action,
                                                  "_selected_action": [str(queued_run.pk)]})
        assert response.status_code == 302
        queued_run.refresh_from_db()
        assert queued_run.status == status



def test_a_run_page_shows_each_call_s_cache_reads_beside_the_prediction(staff_client, finished):
    # The demo model reads nothing from a cache: turn 2's call as a provider would report it.
    UsageRecord.objects.filter(run_id=finished.pk,
                               dedupe_key=f"{finished.pk}/{finished.epoch}:2:0").update(
        input_tokens=100, cache_read_tokens=300, cache_write_tokens=0)
    html = run_page(staff_client, finished)
    table = html[html.index('class="hango-usage hango-cache-calls"'):]
    table = table[:table.index("</table>")]
    rows = re.findall(r'<tr data-turn="(\d+)">(.*?)</tr>', table)
    assert [turn for turn, _ in rows] == ["1", "2", "3", "4", "5"]
    predicted = [c.sent.cached_tokens for c in run_calls(
        finished.pk, tenant_id=finished.session.tenant_id, since=finished.created_at)]
    cells = [re.findall(r"<td>(.*?)</td>", row) for _, row in rows]
    assert cells[1][1:] == ["100", "300", "0", "75%", f"{predicted[1]} tokens"]
    assert cells[0][4:] == ["0%", f"{predicted[0]} tokens"]
    assert all(p > 0 for p in predicted)


def test_a_call_sent_before_prints_were_kept_says_so(staff_client, finished):
    UsageRecord.objects.filter(run_id=finished.pk).update(request_print=None)
    html = run_page(staff_client, finished)
    assert html.count("not kept (sent before request prints)") == 5


def test_run_and_session_pages_show_what_their_calls_cost(staff_client, finished):
    """At the prices the calls were recorded with; a try of the session, unpriced, counts on
    the session's page and not on the run's."""
    price = Price(currency="USD", source="tenant", input=Decimal("2"), cache_write=Decimal("3"),
                  cache_read=Decimal("0.5"), output=Decimal("10"))
    rows = UsageRecord.objects.filter(run_id=finished.pk)
    assert rows.update(**stored(price)) == 5
    spent = sum((price.cost(row).total for row in rows), Decimal(0))
    UsageRecord.objects.create(tenant_id=finished.session.tenant_id, session=finished.session,
                               purpose="context_try", provider="scripted", model="demo",
                               input_tokens=7, dedupe_key="try:unpriced")
    assert f"{money(spent)} USD" in run_page(staff_client, finished)
    assert "unpriced" not in run_page(staff_client, finished)
    assert f"{money(spent)} USD · 1 calls unpriced" in session_page(staff_client,
                                                                   finished.session)
