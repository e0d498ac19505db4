"""The model settings in the Context panel, in real Chromium against hango under gunicorn: each
effective value the agent's calls use and where it came from (the agent's config, hango's table
of known models, a default), and a note when the window is only a guess (an OpenAI-compatible
server that reports no window: the test's model server lists none)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from runs.models import Message, Session
from tests.support.browser import watch_errors
from tests.support.panel import open_panel, staff

pytestmark = pytest.mark.slow


def _session(alice, make_agent, model: str, **config) -> Session:
    agent = make_agent(alice, model=model, config=config)
    session = Session.objects.create(tenant_id=alice.member.tenant_id, agent_id=agent["id"],
                                     member=alice.member, title=f"settings of {model}")
    Message.objects.create(session=session, seq=1, role="user",
                           content=[{"type": "text", "text": "How many rules are there?"}])
    return session


def settled(page) -> None:
    """The first snapshot drawn: a model family's tokenizer loads on the server's first count."""
    expect(page.locator("#context-panel")).to_have_attribute("data-state", "settled",
                                                             timeout=30_000)


def row(page, name: str):
    return page.locator(f'#cp-settings-table tr[data-setting="{name}"] td')


def test_the_panel_shows_each_model_setting_and_where_it_came_from(page, web, alice,
                                                                   make_agent, tenant):
    session = _session(alice, make_agent, "openai:gpt-4o-mini", model_settings={
        "max_output_tokens": 512, "temperature": 0.2, "stop": ["END"]})
    errors = watch_errors(page)
    open_panel(page, web, staff("kim@acme.test", tenant), session)
    settled(page)
    settings = alice.client.get(f"/v1/sessions/{session.pk}/context").json()["model_settings"]
    assert settings["context_window_source"] == "model_table"
    expect(row(page, "context_window")).to_have_text([
        "context_window", f"{settings['context_window']:,} tokens",
        "model_table: hango's table of known models"])
    expect(row(page, "max_output_tokens")).to_have_text([
        "max_output_tokens", "512 tokens", "agent: its config sets it"])
    expect(row(page, "temperature")).to_have_text([
        "temperature", "0.2", "agent: its config sets it"])
    expect(row(page, "stop")).to_have_text(["stop", '["END"]', "agent: its config sets it"])
    expect(row(page, "top_p")).to_have_text([
        "top_p", "not sent", "default: not sent, the server decides"])
    expect(page.locator("#cp-settings-note")).to_have_text("")
    assert errors == []


def test_a_model_hango_does_not_know_shows_its_window_is_a_guess(page, web, alice, make_agent,
                                                                 tenant):
    session = _session(alice, make_agent, "openai:my-own-model")
    errors = watch_errors(page)
    open_panel(page, web, staff("kim@acme.test", tenant), session)
    settled(page)
    expect(row(page, "context_window").nth(2)).to_have_text(
        "default: hango's, a guess for a model it does not know (set it)")
    expect(row(page, "max_output_tokens").nth(2)).to_contain_text("default: hango's 4,096")
    expect(page.locator("#cp-settings-note")).to_contain_text(
        "Set config.model_settings.context_window on the agent.")
    assert errors == []
