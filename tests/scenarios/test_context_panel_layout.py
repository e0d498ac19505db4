"""The Context panel of a long session at the widths of common screens, in real Chromium: its
parts keep to their column, a part low in the list opens where the reader is, an edit shows in
the part's card at once and after Save, and Save is in view wherever the reader is."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from agents import services as agent_services
from agents.models import Agent
from runs.models import Message, Session
from tests.support.browser import screenshot, watch_errors
from tests.support.panel import HEIGHT, open_panel, settled, staff
from tests.support.servers import GunicornProcess

pytestmark = pytest.mark.slow

# Laptop, common desktop and full-HD widths; the admin's menu stays open beside the panel.
WIDTHS = [1280, 1440, 1920]
LONG_MEMORY = "/memories/projects/customer-onboarding-and-retention/quarterly-review-notes.md"


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


def edit_low_part(page: Page, web: GunicornProcess, user, session: Session) -> None:
    """The panel of ``session`` opened as ``user``, message 39 edited to "Only this, now."."""
    open_panel(page, web, user, session)
    settled(page)
    open_low_part(page)
    page.get_by_role("button", name="Edit", exact=True).click()
    page.fill("#cp-edit-text", "Only this, now.")
    page.get_by_role("button", name="Use this text").click()


def assert_card_in_view(page: Page) -> None:
    """The part's card is wholly in the viewport, beside the parts, below the Save bar."""
    box = page.locator("#cp-detail").bounding_box()
    assert box is not None
    assert 0 <= box["y"] and box["y"] + box["height"] <= HEIGHT + 1, box  # + subpixels
    assert box["x"] >= page.evaluate(LAYOUT)["groups"]["right"], box
    bar = page.locator(".cp-actions").bounding_box()
    assert bar is not None and box["y"] >= bar["y"] + bar["height"] - 1, (box, bar)


def assert_save_in_view(page: Page) -> None:
    """Save is wholly in the viewport and nothing covers it."""
    box = page.locator("#cp-save").bounding_box()
    assert box is not None
    assert 0 <= box["y"] and box["y"] + box["height"] <= HEIGHT + 1, box
    centre = [box["x"] + box["width"] / 2, box["y"] + box["height"] / 2]
    assert page.evaluate("([x, y]) => document.elementFromPoint(x, y).id", centre) == "cp-save"


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
    edit_low_part(page, web, staff("kim@acme.test", tenant), long_session)
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


@pytest.mark.parametrize("page", [*WIDTHS, 1000], indirect=True, ids=lambda w: f"{w}px")
def test_save_is_in_view_where_the_edit_was_made(page, web, long_session, tenant):
    """Far down a long session's parts (~4,800 px of page), Save and what it answers stay in
    view: the reader does not scroll back to the top to store an edit."""
    errors = watch_errors(page)
    edit_low_part(page, web, staff("kim@acme.test", tenant), long_session)
    settled(page)
    where = page.evaluate("window.scrollY")
    assert where > 2 * HEIGHT, where
    expect(page.locator("#cp-save")).to_be_enabled()
    assert_save_in_view(page)
    page.locator("#cp-save").click()
    expect(page.locator("#cp-saved")).to_have_text("Saved the session's overrides (1).")
    # Still where the edit was (give or take the note's line), and the note in view there.
    assert abs(page.evaluate("window.scrollY") - where) < HEIGHT / 4
    note = page.locator("#cp-saved").bounding_box()
    assert note is not None and 0 <= note["y"] and note["y"] + note["height"] <= HEIGHT, note
    # Down at the end of the list, too.
    page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
    assert_save_in_view(page)
    assert errors == []
