"""The console in a headless Chromium: Debian's package (`.ci/run` installs it), driven by Playwright's Python API
through its `executable_path`, so no browser is downloaded. Where it is missing the browser tests skip and say so."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Page

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run",
]  # fmt: skip


@contextlib.contextmanager
def console_page(gateway: str, link: str = "/console") -> Iterator[Page]:
    """The console of the gateway at `gateway` (at `link`, a fragment included), opened in a 1280x900 page that
    waits up to 30 s for anything; skips the test where Chromium is not installed."""
    if not CHROMIUM.exists():
        pytest.skip("Debian's chromium is not installed here (.ci/run installs it): the console's browser test")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.set_default_timeout(30_000)
            page.goto(f"{gateway}{link}")
            yield page
        finally:
            browser.close()
