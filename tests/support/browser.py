"""Real Chromium for the admin's screens: Debian's ``chromium`` package driven by Playwright for
Python. Playwright never downloads a browser here: it is pointed at the system's binary
(``HANGO_TEST_CHROMIUM``, default ``/usr/bin/chromium``; ``make test`` installs it)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from playwright.sync_api import Browser, ConsoleMessage, Page, expect, sync_playwright

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path(os.environ.get("HANGO_TEST_CHROMIUM") or "/usr/bin/chromium")
# Screenshots of the admin's screens, kept after the run (var/ is git-ignored).
ARTIFACTS = ROOT / "var" / "artifacts"
# How long an `expect(...)` waits for what it asserts: a guard against a hang, not a bound on
# the page's speed (Playwright's 5 s default fails a first load on a loaded machine, where the
# panel's server answers its first requests after seconds of imports).
EXPECT_TIMEOUT_MS = 60_000


@contextmanager
def chromium() -> Iterator[Browser]:
    """A headless Chromium for the block's tests."""
    if not CHROMIUM.exists():
        pytest.fail(f"No Chromium at {CHROMIUM}: install Debian's package (`apt-get install "
                    "chromium`, as `make test` does) or set HANGO_TEST_CHROMIUM.")
    # Playwright's synchronous API keeps an asyncio loop running on this thread between its
    # calls; the test's own ORM calls are synchronous all the same, so Django's guard against
    # calling the ORM from a coroutine does not apply.
    unsafe = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    expect.set_options(timeout=EXPECT_TIMEOUT_MS)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM))
            try:
                yield browser
            finally:
                browser.close()
    finally:
        if unsafe is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = unsafe


def watch_errors(page: Page) -> list[str]:
    """Every uncaught JavaScript error and every console error of ``page`` from now on (a failed
    request for a resource is one)."""
    errors: list[str] = []

    def console(message: ConsoleMessage) -> None:
        url = message.location.get("url") or ""
        # The browser's own request for /favicon.ico, which no page asked for: hango has none.
        if message.type == "error" and not url.endswith("/favicon.ico"):
            errors.append(f"console: {message.text} ({url})")

    page.on("pageerror", lambda exc: errors.append(f"pageerror: {exc}"))
    page.on("console", console)
    return errors


def log_in(page: Page, base_url: str, username: str, password: str) -> None:
    """Through the admin's login form, as a person does."""
    page.goto(f"{base_url}/admin/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("input[type=submit]")
    page.wait_for_url(f"{base_url}/admin/")


def screenshot(page: Page, name: str) -> Path:
    """A full-page screenshot under ``var/artifacts/`` (printed, so a run's log names it)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / name
    page.screenshot(path=str(path), full_page=True)
    print(f"screenshot: {path}")
    return path
