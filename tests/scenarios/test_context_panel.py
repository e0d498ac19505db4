"""The admin's Context panel in real Chromium, against hango under gunicorn: a staff member logs
in through the admin's form, opens a session's panel from its page, sees every part of the
inspect response with its tokens, unchecks a message and saves — the session's overrides then
leave it and its pair out, the panel's totals are the inspect response's, and the next run's
model request (executed by a real Celery worker, recorded by a local OpenAI-compatible server)
no longer carries it. Try shows the model's answer and adds nothing to the session; no
JavaScript error is logged on the way. A staff user who is not a member of the session's tenant
is told so, plainly. Save is one request, both sets or neither; and at the widths of common
screens a long session's panel keeps its parts to their column, opens a part where the reader
is, and shows an edit in the part's card."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Page, Request, expect

from accounts.models import Member, Role
from agents import services as agent_services
from agents.models import Agent
from context.models import ContextOverride
from harness.state import STATE_VERSION
from runs.models import Message, PendingMessage, Run, Session
from tests.support import workers
from tests.support.browser import log_in, screenshot, watch_errors
from tests.support.replay import ReplayServer, wire, wire_json
from tests.support.runs import wait_for_run
from tests.support.servers import GunicornProcess

pytestmark = pytest.mark.slow

PASSWORD = "a long enough pass phrase"
HEIGHT = 900
# Laptop, common desktop and full-HD widths; the admin's menu stays open beside the panel.
WIDTHS = [1280, 1440, 1920]
LONG_MEMORY = "/memories/projects/customer-onboarding-and-retention/quarterly-review-notes.md"
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
def model_server():
    server = ReplayServer()
    yield server
    server.close()


@pytest.fixture
def model_env(model_server) -> dict[str, str]:
    """The agent's model, openai:gpt-4o, is the local server, for the web and the worker."""
    return {"OPENAI_API_KEY": "test-key", "OPENAI_BASE_URL": model_server.url,
            "HANGO_PROVIDER_MAX_RETRIES": "0"}


@pytest.fixture
def web(transactional_db, tmp_path, model_env):
    server = GunicornProcess(tmp_path, database_url=workers.test_database_url(), env=model_env)
    yield server
    server.stop()


@pytest.fixture
def page(request, browser, web) -> Page:
    """A page 1440 px wide, or as wide as the test's parameter says."""
    width = getattr(request, "param", 1440)
    context = browser.new_context(viewport={"width": width, "height": HEIGHT})
    yield context.new_page()
    context.close()


@pytest.fixture
def session(alice, make_agent) -> Session:
    """Alice's session with a tool call and its result in the history."""
    agent = make_agent(alice, model="openai:gpt-4o", system_prompt="You count words.")
    session = Session.objects.create(tenant_id=alice.member.tenant_id, agent_id=agent["id"],
                                     member=alice.member, title="counting words")
    for seq, (role, content) in enumerate(HISTORY, start=1):
        Message.objects.create(session=session, seq=seq, role=role, content=content)
    return session


def staff(email: str, tenant=None, role: str = Role.OWNER):
    user = get_user_model().objects.create_superuser(email, email, PASSWORD)
    if tenant is not None:
        Member.objects.create(tenant=tenant, user=user, role=role)
    return user


def open_panel(page: Page, web: GunicornProcess, user, session: Session) -> None:
    """Log in, then from the admin's home to the session's page and its Context button."""
    log_in(page, web.url, user.username, PASSWORD)
    page.get_by_role("link", name="Sessions", exact=True).click()
    page.get_by_role("link", name=str(session)).first.click()
    page.get_by_role("link", name="Context", exact=True).click()


def tokens(page: Page, selector: str) -> int:
    return int(page.locator(selector).get_attribute("data-tokens") or "-1")


def settled(page: Page) -> None:
    expect(page.locator("#context-panel")).to_have_attribute("data-state", "settled")


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
    agent = session.agent
    agent.config = {**agent.config, "summarization": {"trigger_tokens": 100,
                                                      "keep_messages": 2}}
    agent.save(update_fields=["config"])
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


# -- a long session at common screen widths -------------------------------------------------

# Where each thing of the panel is, in the viewport's pixels.
LAYOUT = """() => {
  const box = (node) => {
    const r = node.getBoundingClientRect();
    return {left: r.left, right: r.right, top: r.top, bottom: r.bottom, width: r.width};
  };
  const inRows = (selector) => [...document.querySelectorAll(selector)].map((node) => ({
    part: node.closest("tr").dataset.part, what: node.className, text: node.textContent,
    ...box(node)}));
  return {
    groups: box(document.getElementById("cp-groups")),
    side: box(document.querySelector(".cp-side")),
    tryCard: box(document.getElementById("cp-try")),
    cells: inRows("tr.cp-part td, tr.cp-part .cp-open, tr.cp-part .cp-badge"),
    ids: inRows("tr.cp-part td.cp-id"),
    opens: inRows("tr.cp-part .cp-open"),
    previews: inRows("tr.cp-part td.cp-preview"),
    badges: inRows("tr.cp-part .cp-badge"),
  };
}"""


def overlap(a: dict, b: dict) -> bool:
    return (a["left"] < b["right"] and b["left"] < a["right"]
            and a["top"] < b["bottom"] and b["top"] < a["bottom"])


@pytest.fixture
def long_session(alice, make_agent) -> Session:
    """Forty messages on a Claude agent whose prompt is long enough for the prompt cache (its
    parts and the tools are marked `cached prefix`), with a memory file at a long path."""
    agent = make_agent(alice, model="anthropic:claude-sonnet-4-6",
                       system_prompt="You count words. " * 400)
    agent_services.memory_file_create(agent=Agent.objects.get(pk=agent["id"]), path=LONG_MEMORY,
                                      content="Remember the customer's name. " * 20)
    session = Session.objects.create(tenant_id=alice.member.tenant_id, agent_id=agent["id"],
                                     member=alice.member, title="a long talk")
    for seq in range(1, 41):
        Message.objects.create(session=session, seq=seq, role="user" if seq % 2 else "assistant",
                               content=[{"type": "text", "text": f"Message {seq}: "
                                         + "lorem ipsum dolor sit amet " * 12}])
    return session


@pytest.mark.parametrize("page", WIDTHS, indirect=True, ids=lambda w: f"{w}px")
def test_the_parts_keep_to_their_column(page, web, long_session, tenant):
    errors = watch_errors(page)
    open_panel(page, web, staff("kim@acme.test", tenant), long_session)
    settled(page)
    width = page.evaluate("window.innerWidth")
    screenshot(page, f"context-panel-{width}.png")
    layout = page.evaluate(LAYOUT)
    groups, side, try_card = layout["groups"], layout["side"], layout["tryCard"]
    assert not overlap(groups, side), layout
    # Every cell of every part, its id and its badges stay in the parts' column, clear of the
    # side column's cards.
    for cell in layout["cells"]:
        where = (cell["part"], cell["what"], cell["text"][:40])
        assert groups["left"] - 1 <= cell["left"] and cell["right"] <= groups["right"] + 1, (
            where, cell, groups)
        assert not overlap(cell, side), (where, cell, side)
    cached = [b for b in layout["badges"] if b["text"] == "cached prefix"]
    assert {b["part"] for b in cached} >= {"system:agent", "tool:echo"}, layout["badges"]
    for badge in layout["badges"]:
        assert not overlap(badge, try_card), (badge, try_card)
    # A long id wraps in its own cell; each preview keeps a readable width beside it.
    memory = f"system:memory:{LONG_MEMORY}"
    for open_, cell in zip(layout["opens"], layout["ids"], strict=True):
        assert open_["right"] <= cell["right"] + 1, (open_, cell)
    assert any(p["part"] == memory for p in layout["previews"])
    for preview in layout["previews"]:
        assert preview["width"] >= 240, (preview["part"], preview["width"])
    assert errors == []


def open_low_part(page: Page) -> None:
    """Message 39 of the long session, opened from far down the page, as a reader reaches it."""
    page.locator('tr[data-part="message:39"] .cp-open').click()
    assert page.evaluate("window.scrollY") > HEIGHT
    expect(page.locator("#cp-detail-content")).to_contain_text("Message 39: lorem ipsum")


def assert_card_in_view(page: Page) -> None:
    """The part's card is wholly in the viewport, beside the parts."""
    box = page.locator("#cp-detail").bounding_box()
    assert box is not None
    assert 0 <= box["y"] and box["y"] + box["height"] <= HEIGHT + 1, box  # + subpixels
    assert box["x"] >= page.evaluate(LAYOUT)["groups"]["right"], box


@pytest.mark.parametrize("page", WIDTHS, indirect=True, ids=lambda w: f"{w}px")
def test_a_part_low_in_the_list_opens_in_view(page, web, long_session, tenant):
    errors = watch_errors(page)
    open_panel(page, web, staff("kim@acme.test", tenant), long_session)
    settled(page)
    open_low_part(page)
    assert_card_in_view(page)
    # Still there as the reader scrolls on, up the list or down to its end.
    page.locator('tr[data-part="message:20"]').scroll_into_view_if_needed()
    assert_card_in_view(page)
    page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
    assert page.evaluate("window.scrollY + window.innerHeight") >= page.evaluate(
        "document.body.scrollHeight") - 1
    assert_card_in_view(page)
    assert errors == []


@pytest.mark.parametrize("page", [1000], indirect=True, ids=lambda w: f"{w}px")
def test_below_the_parts_on_a_narrow_screen_the_card_is_scrolled_to(page, web, long_session,
                                                                      tenant):
    """One column under 1,024 px: the card comes after every part, and the page is brought to
    it, once it holds the part's content."""
    open_panel(page, web, staff("kim@acme.test", tenant), long_session)
    settled(page)
    open_low_part(page)
    box = page.locator("#cp-detail").bounding_box()
    assert box is not None
    assert 0 <= box["y"] and box["y"] + box["height"] <= HEIGHT + 1, box  # + subpixels
    groups = page.evaluate(LAYOUT)["groups"]
    assert box["y"] >= groups["bottom"], (box, groups)


@pytest.mark.parametrize("page", WIDTHS, indirect=True, ids=lambda w: f"{w}px")
def test_an_edit_shows_in_the_part_card(page, web, long_session, tenant):
    errors = watch_errors(page)
    open_panel(page, web, staff("kim@acme.test", tenant), long_session)
    settled(page)
    open_low_part(page)
    page.get_by_role("button", name="Edit", exact=True).click()
    page.fill("#cp-edit-text", "Only this, now.")
    page.get_by_role("button", name="Use this text").click()
    # At once, the card shows the text the selection sends, and what it replaces.
    content = page.locator("#cp-detail-content")
    expect(content).to_contain_text('"text": "Only this, now."')
    expect(content).not_to_contain_text("lorem ipsum")
    expect(page.locator("#cp-detail-note")).to_contain_text("not saved yet")
    expect(page.locator("#cp-detail-original pre")).to_contain_text("Message 39: lorem ipsum")
    settled(page)
    expect(page.locator('tr[data-part="message:39"] .cp-preview')).to_have_text(
        "Only this, now.")
    assert_card_in_view(page)
    page.get_by_role("button", name="Save", exact=True).click()
    # Only the set that changed is sent: the agent's, every session's, is not written back.
    expect(page.locator("#cp-saved")).to_have_text("Saved the session's overrides (1).")
    settled(page)
    expect(page.locator("#cp-detail-note")).to_contain_text("with the saved replacement")
    expect(content).to_contain_text('"text": "Only this, now."')
    expect(content).not_to_contain_text("lorem ipsum")
    assert errors == []
