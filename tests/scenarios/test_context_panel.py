"""The admin's Context panel in real Chromium, against hango under gunicorn: a staff member logs
in through the admin's form, opens a session's panel from its page, sees every part of the
inspect response with its tokens, unchecks a message and saves — the session's overrides then
leave it and its pair out, the panel's totals are the inspect response's, and the next run's
model request (executed by a real Celery worker, recorded by a local OpenAI-compatible server)
no longer carries it. Try shows the model's answer and adds nothing to the session; no
JavaScript error is logged on the way. A staff user who is not a member of the session's tenant
is told so, plainly. Save is one request, both sets or neither (the layout at common
widths: test_context_panel_layout.py)."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import Request, expect

from agents.services import agent_update
from context.models import ContextOverride
from harness.state import STATE_VERSION
from runs.models import Message, PendingMessage, Run, Session
from tests.support.browser import screenshot, watch_errors
from tests.support.panel import open_panel, settled, staff, tokens
from tests.support.replay import wire, wire_json
from tests.support.runs import wait_for_run

pytestmark = pytest.mark.slow

HISTORY = [
    ("user", [{"type": "text", "text": "Echo 'alpha', then tell me how many words it has."}]),
    ("assistant", [{"type": "text", "text": "Echoing."},
                   {"type": "tool_use", "id": "call_1", "name": "echo",
                    "input": {"text": "alpha"}}]),
    ("user", [{"type": "tool_result", "tool_use_id": "call_1", "content": "alpha <b>&amp;</b>",
               "is_error": False}]),
    ("assistant", [{"type": "text", "text": "It said alpha: one word. <script>x()</script>"}]),
]


@pytest.fixture
def session(alice, make_agent) -> Session:
    """Alice's session with a tool call and its result in the history."""
    agent = make_agent(alice, model="openai:gpt-4o", system_prompt="You count words.")
    session = Session.objects.create(tenant_id=alice.member.tenant_id, agent_id=agent["id"],
                                     member=alice.member, title="counting words")
    for seq, (role, content) in enumerate(HISTORY, start=1):
        Message.objects.create(session=session, seq=seq, role=role, content=content)
    return session


def test_uncheck_save_and_try_in_the_panel(page, web, session, alice, tenant, model_server,
                                           start_worker, model_env):
    worker = start_worker(**model_env)
    errors = watch_errors(page)
    open_panel(page, web, staff("kim@acme.test", tenant), session)
    settled(page)
    url = f"/v1/sessions/{session.pk}/context"
    inspected = alice.client.get(url).json()
    for group in ("system", "tools", "messages"):
        for part in inspected[group]:
            row = page.locator(f'[data-group="{group}"] tr[data-part="{part["id"]}"]')
            expect(row).to_be_visible()
            assert tokens(page, f'tr[data-part="{part["id"]}"] .cp-tokens') == part["tokens"]
            expect(row.locator(".cp-label")).to_have_text(part["label"])
    expect(page.locator("tr[data-part]")).to_have_count(
        sum(len(inspected[g]) for g in ("system", "tools", "messages")))
    # OpenAI's tools are counted by its rendering rule, and the panel says so; texts are not.
    for part in inspected["tools"]:
        expect(page.locator(f'tr[data-part="{part["id"]}"] .cp-notes')).to_contain_text(
            "counted by rule")
    expect(page.locator('tr[data-part="message:1"] .cp-notes')).not_to_contain_text("counted")
    # Session content is text on the page, never markup.
    expect(page.locator('tr[data-part="message:4"] .cp-preview')).to_contain_text("<script>")
    assert tokens(page, "#cp-total-after") == inspected["totals"]["after"]

    page.locator('tr[data-part="message:3"] input[type=checkbox]').uncheck()
    # At once, before the server's totals: the pair goes too, and the totals drop.
    expect(page.locator('tr[data-part="message:2"] input[type=checkbox]')).not_to_be_checked()
    expect(page.locator('tr[data-part="message:2"] .cp-notes')).to_contain_text(
        "left out with message:3")
    assert tokens(page, "#cp-total-after") < inspected["totals"]["after"]
    settled(page)
    # A part in full, and edited: the agent's prompt replaced.
    page.locator('tr[data-part="system:agent"] .cp-open').click()
    expect(page.locator("#cp-detail-content")).to_have_text("You count words.")
    page.get_by_role("button", name="Edit", exact=True).click()
    page.fill("#cp-edit-text", "You count words, tersely.")
    page.get_by_role("button", name="Use this text").click()
    expect(page.locator('tr[data-part="system:agent"] .cp-notes')).to_contain_text("replaced")
    settled(page)
    requests: list[tuple[str, str]] = []

    def record(sent: Request) -> None:
        # The diff card's own reads (the session's runs, a comparison) follow a save apart.
        if "/runs?" not in sent.url and "against=" not in sent.url:
            requests.append((sent.method, sent.url.removeprefix(web.url)))

    page.on("request", record)
    # The card shows the saved text before the part is read again: wait for that read itself
    # (waiting for "networkidle" returned at once, the page having loaded long before).
    with page.expect_response(lambda answer: "full=system%3Aagent" in answer.url):
        page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator('#cp-added li[data-part="message:2"]')).to_be_visible()
    expect(page.locator("#cp-saved")).to_contain_text("Saved the agent's overrides (1) and the "
                                                      "session's overrides (2).")
    settled(page)
    expect(page.locator("#cp-detail-content")).to_have_text("You count words, tersely.")
    expect(page.locator("#cp-detail-original pre")).to_have_text("You count words.")
    page.remove_listener("request", record)
    # Save is one request for both sets; then the snapshot and the open part are read again, in
    # place: neither the page nor the sets.
    api = f"/v1/sessions/{session.pk}"
    assert requests == [("PUT", f"{api}/context-overrides/both"), ("GET", f"{api}/context"),
                        ("GET", f"{api}/context?full=system%3Aagent")]

    # (a) the session's overrides leave the message and its pair out
    saved = alice.client.get(f"/v1/sessions/{session.pk}/context-overrides").json()
    assert sorted(o["part"] for o in saved["overrides"]) == ["message:2", "message:3"]
    assert {o["action"] for o in saved["overrides"]} == {"exclude"}
    assert alice.client.get(f"/v1/agents/{session.agent_id}/context-overrides").json()[
        "overrides"] == [{"part": "system:agent", "action": "replace",
                          "replacement": "You count words, tersely."}]
    # (b) the panel's totals are the inspect response's
    inspected = alice.client.get(url).json()
    assert tokens(page, "#cp-total-before") == inspected["totals"]["before"]
    assert tokens(page, "#cp-total-after") == inspected["totals"]["after"]
    assert inspected["totals"]["after"] < inspected["totals"]["before"]
    for key, group in (("system", "system"), ("tools", "tools"), ("messages", "messages")):
        sent = sum(p["tokens"] for p in inspected[group] if p["included"])
        assert tokens(page, f'[data-group="{group}"] .cp-group-total') == sent, key
    assert tokens(page, "#cp-sum-framing") == inspected["framing"]

    # (d) Try: the answer beside the panel, nothing added to the session
    messages = Message.objects.filter(session=session).count()
    model_server.reply(200, wire_json("openai_completion_text.json"))
    page.fill("#cp-try-message", "Now count 'alpha beta'.")
    page.get_by_role("button", name="Try", exact=True).click()
    expect(page.locator("#cp-answer .cp-answer-text")).to_have_text("It has 3 words.")
    expect(page.locator("#cp-usage")).to_contain_text("input tokens")
    assert Message.objects.filter(session=session).count() == messages
    tried = json.dumps(model_server.bodies[-1]["messages"])
    assert "call_1" not in tried and "Now count 'alpha beta'." in tried
    page.locator("#toggle-nav-sidebar").click()  # the admin's menu folded: room for the panel
    screenshot(page, "context-panel.png")

    # (c) the next run's model request no longer carries the message (nor its pair); a run
    # streams its model call
    model_server.reply_sse(wire("openai_stream_text.sse"))
    posted = alice.client.post(f"/v1/sessions/{session.pk}/messages",
                               {"content": "And 'alpha beta gamma'?"}, format="json")
    assert posted.status_code == 202, posted.content
    run = wait_for_run(posted.json()["run"]["id"])
    assert run.status == "completed", (run.error, worker.log())
    sent = json.dumps(model_server.bodies[-1]["messages"])
    assert "call_1" not in sent and "alpha <b>&amp;</b>" not in sent
    assert "And 'alpha beta gamma'?" in sent and "Echo 'alpha'" in sent
    assert "You count words, tersely." in json.dumps(model_server.bodies[-1])
    # (e) no JavaScript error on the way
    assert errors == []


def test_a_staff_user_who_is_not_a_member_is_told_so(page, web, session):
    errors = watch_errors(page)
    open_panel(page, web, staff("root@example.com"), session)
    refusal = page.locator("#context-refusal")
    expect(refusal).to_contain_text("You are not a member of the tenant “acme”")
    expect(page.locator("#context-panel")).to_have_count(0)
    assert errors == []


def test_a_selection_the_api_would_refuse_cannot_be_saved(page, web, session, tenant):
    errors = watch_errors(page)
    open_panel(page, web, staff("kim@acme.test", tenant), session)
    settled(page)
    page.locator('tr[data-part="message:1"] input[type=checkbox]').uncheck()
    expect(page.locator("#context-panel")).to_have_attribute("data-state", "refused")
    expect(page.locator("#cp-status")).to_contain_text("starts with an assistant message")
    expect(page.get_by_role("button", name="Save", exact=True)).to_be_disabled()
    page.get_by_role("button", name="Revert to saved").click()
    settled(page)
    expect(page.locator('tr[data-part="message:1"] input[type=checkbox]')).to_be_checked()
    # The one error logged is the browser's note of the preview's 422, which the panel shows.
    assert [e for e in errors if "422" not in e] == [] and len(errors) == 1


def test_the_panel_says_whose_call_it_shows(page, web, session, tenant):
    """A session paused for approval with a message queued behind its run, as the run and the
    queue store them: the panel says the call is that run's, what the paused batch sends, and
    what waits."""
    Message.objects.create(session=session, seq=5, role="assistant", content=[
        {"type": "tool_use", "id": "call_2", "name": "word_count", "input": {"text": "alpha"}}])
    Run.objects.create(session=session, agent=session.agent, status="awaiting_approval", turn=1,
                       state_json={"version": STATE_VERSION, "todos": [], "private": {},
                                   "pending_batch": {"done": {}, "decisions": {}, "pending": [
                                       {"tool_use_id": "call_2", "name": "word_count",
                                        "input": {"text": "alpha"},
                                        "allowed_decisions": ["approve", "reject"]}]}})
    waiting = Run.objects.create(session=session, agent=session.agent, status="pending")
    PendingMessage.objects.create(session=session, run=waiting,
                                  content=[{"type": "text", "text": "and then beta"}])
    errors = watch_errors(page)
    open_panel(page, web, staff("kim@acme.test", tenant), session)
    settled(page)
    flags = page.locator("#cp-flags")
    expect(flags).to_contain_text("run awaiting_approval, turn 1")
    expect(flags).to_contain_text("paused batch: 1 of 1 results not known yet")
    expect(flags).to_contain_text("1 queued message(s), not in this request")
    batch = page.locator('tr[data-part="message:6"]')
    expect(batch.locator(".cp-label")).to_contain_text("the paused batch's results")
    expect(batch.locator(".cp-preview")).to_contain_text("word_count → (waiting for a decision)")
    expect(page.locator('tr[data-part^="repair:"]')).to_have_count(0)
    assert errors == []


def test_the_panel_shows_what_a_compacted_call_sends(page, web, session, tenant):
    agent = session.agent  # changed as its API changes it: a new version, hashed
    agent_update(agent=agent, data={"config": {**agent.config, "summarization": {
        "trigger_tokens": 100, "keep_messages": 2}}})
    errors = watch_errors(page)
    open_panel(page, web, staff("kim@acme.test", tenant), session)
    settled(page)
    expect(page.locator("#cp-flags")).to_contain_text("would compact")
    summary = page.locator('tr[data-part="summary"]')
    # The budget is smaller than the tools alone: compaction keeps the last message only.
    expect(summary.locator(".cp-label")).to_contain_text("the summary of #1–#3")
    expect(summary.locator(".cp-label")).to_contain_text("its text is not known yet")
    for seq in (1, 2, 3):
        expect(page.locator(f'tr[data-part="message:{seq}"] .cp-notes')).to_contain_text(
            "summarized")
    expect(page.locator('tr[data-part="message:4"] .cp-notes')).not_to_contain_text(
        "summarized")
    assert errors == []


def test_a_save_the_server_refuses_stores_neither_set(page, web, session, tenant):
    """The agent's prompt replaced and a message left out, then the history changes under the
    selection (its first message becomes the assistant's): the session's set would leave no user
    message, so the save is refused whole — the agent's set is not stored either."""
    errors = watch_errors(page)
    open_panel(page, web, staff("kim@acme.test", tenant), session)
    settled(page)
    page.locator('tr[data-part="system:agent"] .cp-open').click()
    page.get_by_role("button", name="Edit", exact=True).click()
    page.fill("#cp-edit-text", "Be terse.")
    page.get_by_role("button", name="Use this text").click()
    page.locator('tr[data-part="message:3"] input[type=checkbox]').uncheck()
    settled(page)
    Message.objects.filter(session=session, seq=1).update(
        role="assistant", content=[{"type": "text", "text": "Hello."}])
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator("#cp-status")).to_contain_text("Not saved:")
    expect(page.locator("#cp-status")).to_contain_text("No user message would be left")
    assert not ContextOverride.objects.exists()
    # The selection stays, unsaved, for the user to change.
    expect(page.locator('tr[data-part="system:agent"] .cp-notes')).to_contain_text("unsaved")
    assert errors and all("422" in e for e in errors), errors
