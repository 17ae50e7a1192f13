"""Debian's Chromium driven by Playwright, for the dashboard's browser tests: the browser
fixture, a logged-in page, and a record of the page's CSP violations. (No tests here.)"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.web import Served

CHROMIUM = Path("/usr/bin/chromium")
WAIT = 60_000  # ms: a shared, loaded machine
needs_chromium = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason="needs Debian's chromium at /usr/bin/chromium (apt-get install chromium; CI has it)",
)

#: Runs in every page before its own scripts (Playwright's init script is not subject to the
#: page's CSP): each CSP violation the page reports is kept in window.__csp.
_RECORD_CSP = """
window.__csp = [];
document.addEventListener('securitypolicyviolation', (e) => {
  window.__csp.push(e.violatedDirective + ' ' + (e.blockedURI || '') + ' ' + (e.sample || ''));
});
"""


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(
            executable_path=str(CHROMIUM),
            args=[
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--no-first-run",
                "--disable-sync",
            ],
        )
        try:
            yield b
        finally:
            b.close()


def open_logged_in(
    browser: Any, served: Served, viewport: dict[str, int], **options: Any
) -> tuple[Any, Any]:
    """A new context (``options`` go to Playwright's ``new_context``) and page on the
    dashboard, past the token exchange, recording CSP violations (:func:`csp_violations`)."""
    context = browser.new_context(viewport=viewport, **options)
    context.add_init_script(_RECORD_CSP)
    page = context.new_page()
    page.goto(served.url)
    page.wait_for_selector("h1:has-text('Sessions')", timeout=WAIT)
    return context, page


def csp_violations(page: Any) -> list[str]:
    return list(page.evaluate("() => window.__csp || []"))
