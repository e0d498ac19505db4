"""The next call's cost in the Context panel, in real Chromium against hango under gunicorn:
the range the inspect response gives (all of the cache prefix read, none of it, the likely
figure) for a priced model, and a plain note for a model with no known price."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from runs.models import Message, Session
from tests.support.browser import screenshot, watch_errors
from tests.support.panel import open_panel, settled, staff

pytestmark = pytest.mark.slow


def _session(alice, make_agent, model: str, prompt: str) -> Session:
    agent = make_agent(alice, model=model, system_prompt=prompt)
    session = Session.objects.create(tenant_id=alice.member.tenant_id, agent_id=agent["id"],
                                     member=alice.member, title=f"priced {model}")
    Message.objects.create(session=session, seq=1, role="user",
                           content=[{"type": "text", "text": "How many rules are there?"}])
    return session


def test_the_panel_shows_the_next_calls_cost_range(page, web, alice, make_agent, tenant):
    session = _session(alice, make_agent, "anthropic:claude-sonnet-4-5",
                       "You count words. " * 400)  # long enough for the prompt cache
    errors = watch_errors(page)
    open_panel(page, web, staff("kim@acme.test", tenant), session)
    settled(page)
    cost = alice.client.get(f"/v1/sessions/{session.pk}/context").json()["cost"]
    assert cost["all_cached"] != cost["none_cached"]
    expect(page.locator("#cp-cost-range")).to_be_visible()
    expect(page.locator("#cp-cost-likely")).to_have_text(f"{cost['likely']} USD")
    expect(page.locator("#cp-cost-all")).to_have_text(f"{cost['all_cached']} USD")
    expect(page.locator("#cp-cost-none")).to_have_text(f"{cost['none_cached']} USD")
    expect(page.locator("#cp-cost-output")).to_have_text(f"{cost['output_rate']} USD / M tokens")
    expect(page.locator("#cp-cost-note")).to_contain_text("no calls yet")
    expect(page.locator("#cp-cost-note")).to_contain_text(cost["source"])
    # Leaving a tool out moves the range with the server's preview.
    page.locator('[data-group="tools"] tr[data-part] input[type=checkbox]').first.uncheck()
    settled(page)
    expect(page.locator("#cp-cost-none")).not_to_have_text(f"{cost['none_cached']} USD")
    screenshot(page, "context-panel-cost.png")
    assert errors == []


def test_an_unpriced_model_says_it_has_no_price(page, web, alice, make_agent, tenant):
    session = _session(alice, make_agent, "scripted:demo", "You count words.")
    errors = watch_errors(page)
    open_panel(page, web, staff("kim@acme.test", tenant), session)
    settled(page)
    expect(page.locator("#cp-cost-range")).to_be_hidden()
    expect(page.locator("#cp-cost-note")).to_contain_text("has no known price")
    assert errors == []
