"""The Context panel's request diff in real Chromium, against hango under gunicorn: after a run
of the demo model, each part's row says what became of it since the session's last call (added,
removed, changed, same, with its token delta), as GET .../context?against= answers; a system
prompt replaced and saved in the panel is then marked as the part that breaks the cached
prefix, and an excluded tool is shown removed. No JavaScript error is logged on the way."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from runs.models import Session
from tests.support.browser import screenshot, watch_errors
from tests.support.panel import open_panel, settled, staff

pytestmark = pytest.mark.slow


@pytest.fixture
def session(alice, make_agent, make_session, inline_runs) -> Session:
    """Alice's session after one demo run: ten messages, five calls sent, each printed."""
    agent = make_agent(alice, model="scripted:demo", system_prompt="You count words.")
    made = make_session(alice, agent_id=agent["id"])
    posted = alice.client.post(f"/v1/sessions/{made['id']}/messages",
                               {"content": "count these four words"}, format="json")
    assert posted.json()["run"]["status"] == "completed"
    Session.objects.filter(pk=made["id"]).update(title="counting words")  # a link to find
    return Session.objects.get(pk=made["id"])


def diff_settled(page) -> None:
    expect(page.locator("#cp-diff")).to_have_attribute("data-state", "settled")


def badge(page, part: str):
    return page.locator(f'tr[data-part="{part}"] .cp-diff .cp-badge').first


def test_the_panel_shows_the_diff_and_where_the_cache_breaks(page, web, session, alice,
                                                             tenant):
    errors = watch_errors(page)
    open_panel(page, web, staff("kim@acme.test", tenant), session)
    settled(page)
    diff_settled(page)
    url = f"/v1/sessions/{session.pk}/context"
    diff = alice.client.get(url, {"against": "last"}).json()["diff"]
    for part in diff["parts"]:
        row_badge = badge(page, part["id"])
        expect(row_badge).to_have_attribute("data-status", part["status"])
    answer = next(p for p in diff["parts"] if p["id"] == "message:10")
    expect(badge(page, "message:10")).to_have_text(f"added +{answer['tokens']}")
    expect(badge(page, "message:1")).to_have_text("same")
    expect(page.locator("#cp-diff-summary")).to_contain_text(
        f"Against run {diff['against']['run']}, turn 5")
    expect(page.locator("#cp-diff-summary")).to_contain_text("is sent as it was")
    call = diff["against"]["call"]  # what the cache did for that call, beside the prediction
    expect(page.locator("#cp-diff-cache")).to_contain_text(
        f"the provider read {call['cache_read_tokens']:,} tokens from its cache")
    expect(page.locator("#cp-diff-cache")).to_contain_text(
        f"the inspector predicted {call['predicted_cached_tokens']:,} cached.")
    expect(page.locator("#cp-diff-break")).to_be_hidden()
    expect(page.locator(".cp-diff-break-badge")).to_have_count(0)

    # Replace the agent's prompt and leave a tool out, then save: the diff follows the save.
    page.locator('tr[data-part="system:agent"] .cp-open').click()
    page.get_by_role("button", name="Edit", exact=True).click()
    page.fill("#cp-edit-text", "You count words, tersely, in one short sentence each time.")
    page.get_by_role("button", name="Use this text").click()
    page.locator('tr[data-part="tool:echo"] input[type=checkbox]').uncheck()
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator("#cp-saved")).to_contain_text("Saved the agent's overrides (2)")
    settled(page)
    expect(badge(page, "system:agent")).to_have_attribute("data-status", "changed")
    expect(badge(page, "tool:echo")).to_have_attribute("data-status", "removed")
    saved = alice.client.get(url, {"against": "last"}).json()["diff"]
    cut = saved["cache_break"]
    assert cut is not None
    # The tools come first in the prefix: the excluded echo breaks it before the prompt does.
    assert (cut["part"], cut["status"]) == ("tool:echo", "removed")
    expect(page.locator(f'tr[data-part="{cut["part"]}"] .cp-diff-break-badge')).to_have_text(
        "breaks the cache")
    expect(page.locator("#cp-diff-break")).to_contain_text(
        "tool:echo (removed) breaks the earlier call's cached prefix")
    prompt = next(p for p in saved["parts"] if p["id"] == "system:agent")
    expect(badge(page, "system:agent")).to_have_text(f"changed +{prompt['delta']}")
    screenshot(page, "context-panel-diff.png")

    # Against the run's first call: every message after the first was added since.
    page.fill("#cp-diff-against", f"{saved['against']['run']}:1")
    page.get_by_role("button", name="Compare").click()
    expect(page.locator("#cp-diff-summary")).to_contain_text("turn 1:")
    expect(badge(page, "message:9")).to_have_attribute("data-status", "added")
    page.fill("#cp-diff-against", "nonsense")
    page.get_by_role("button", name="Compare").click()
    expect(page.locator("#cp-diff")).to_have_attribute("data-state", "failed")
    expect(page.locator("#cp-diff-summary")).to_contain_text("against is 'last' or")
    # The refused comparison's request is the only error the browser logs.
    assert all("400" in e for e in errors), errors


def test_a_session_that_sent_nothing_says_so_without_an_error(page, web, alice, tenant,
                                                              make_agent, make_session):
    agent = make_agent(alice, model="scripted:demo")
    made = make_session(alice, agent_id=agent["id"])
    Session.objects.filter(pk=made["id"]).update(title="nothing sent yet")
    errors = watch_errors(page)
    open_panel(page, web, staff("kim@acme.test", tenant), Session.objects.get(pk=made["id"]))
    settled(page)
    expect(page.locator("#cp-diff")).to_have_attribute("data-state", "none")
    expect(page.locator("#cp-diff-summary")).to_have_text(
        "The session has sent no model call yet: there is nothing to compare the next one "
        "with.")
    expect(page.locator("tr[data-part] .cp-diff .cp-badge")).to_have_count(0)
    assert errors == []
