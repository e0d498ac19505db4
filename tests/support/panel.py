"""Driving the admin's Context panel in Chromium: a staff user, logging in and opening a
session's panel, reading its figures."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from playwright.sync_api import Page, expect

from accounts.models import Member, Role
from runs.models import Session
from tests.support.browser import log_in
from tests.support.servers import GunicornProcess

PASSWORD = "a long enough pass phrase"
HEIGHT = 900  # the viewport's, whatever its width


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
