"""The admin's usage list at the widths of common screens, in real Chromium: every column, the
cost included, in view without scrolling the table sideways."""

from __future__ import annotations

from decimal import Decimal

import pytest

from accounts.models import UsageRecord
from accounts.prices import Price, stored
from tests.support.browser import log_in, screenshot, watch_errors
from tests.support.panel import PASSWORD, staff

pytestmark = pytest.mark.slow

WIDTHS = [1280, 1440, 1920]
PRICE = Price(currency="USD", source="genai-prices 0.2.5", input=Decimal("3"),
              cache_write=Decimal("3.75"), cache_read=Decimal("0.3"), output=Decimal("15"))

# Each column's header and first cell, and the table's scroll box, in the viewport's pixels.
COLUMNS = """() => {
  const box = (node) => { const r = node.getBoundingClientRect();
                          return {left: r.left, right: r.right}; };
  const results = document.querySelector("#changelist .results");
  return {
    viewport: document.documentElement.clientWidth,
    scroll: {client: results.clientWidth, content: results.scrollWidth, ...box(results)},
    headers: [...document.querySelectorAll("#result_list thead th")].map((th) => ({
      name: th.className.replace(/\\b(sortable|sorted|ascending|descending)\\b/g, "").trim(),
      ...box(th)})),
  };
}"""


@pytest.fixture
def usage(queued_run) -> None:
    """Calls of a run on a priced model with a long name, and one on an unpriced model."""
    tenant = queued_run.session.tenant
    for n in range(3):
        UsageRecord.objects.create(
            tenant=tenant, session=queued_run.session, run=queued_run,
            agent_id=queued_run.agent_id, purpose="context_try", provider="anthropic",
            model="claude-sonnet-4-5-20250929", input_tokens=1_234_567, output_tokens=12_345,
            cache_read_tokens=987_654, cache_write_tokens=123_456, usage_source="counted",
            dedupe_key=f"{queued_run.pk}:{n}:0", **stored(PRICE))


@pytest.mark.parametrize("page", WIDTHS, indirect=True, ids=lambda w: f"{w}px")
def test_every_column_of_the_usage_list_is_in_view(page, web, usage, tenant):
    errors = watch_errors(page)
    user = staff("kim@acme.test", tenant)
    log_in(page, web.url, user.username, PASSWORD)
    page.goto(f"{web.url}/admin/accounts/usagerecord/")
    width = page.evaluate("window.innerWidth")
    screenshot(page, f"usage-list-{width}.png")
    layout = page.evaluate(COLUMNS)
    scroll = layout["scroll"]
    assert scroll["content"] <= scroll["client"], layout  # nothing to scroll sideways to
    assert scroll["right"] <= layout["viewport"], layout
    names = [h["name"] for h in layout["headers"]]
    assert "column-cost" in names, names
    for header in layout["headers"]:
        assert header["right"] <= scroll["right"] + 1, (header, scroll)
    assert errors == []
