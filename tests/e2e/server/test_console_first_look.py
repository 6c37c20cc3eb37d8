"""The console at first look, in a real headless Chromium against a real `toolsift serve`: it shows something
while its data loads, has a favicon, shows the manifest as the text the model reads, says when a search found
nothing, and shows why a server is down with the last lines it wrote on stderr."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator

import httpx
import pytest

from tests.support import SERVERS, free_port, served_gateway
from tests.support.browser import console_page

BROKEN = "import sys\nprint('cannot open the inventory database', file=sys.stderr)\nsys.exit(3)\n"


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("console-first-look")
    (folder / "broken.py").write_text(BROKEN)
    config = {
        "mcpServers": {
            "weather": {"command": sys.executable, "args": [str(SERVERS / "weather.py")], "defer_loading": False},
            "finance": {"command": sys.executable, "args": [str(SERVERS / "finance.py")], "defer_loading": True},
            "inventory": {"command": sys.executable, "args": ["broken.py"]},
        }
    }
    path = folder / "config.json"
    path.write_text(json.dumps(config))
    with served_gateway(path, free_port()) as base:
        yield base


def test_the_page_says_it_is_loading_and_has_a_favicon(gateway: str) -> None:
    page = httpx.get(f"{gateway}/console", timeout=10).text
    assert '<p id="loading" class="loading">Loading' in page
    assert '<span id="status" role="status">loading…</span>' in page
    assert '<link rel="icon" href="data:image/svg+xml,' in page  # the page's CSP allows data: images


def test_the_console_reads_as_text_and_says_why(gateway: str) -> None:
    with console_page(gateway) as page:
        from playwright.sync_api import expect

        expect(page.locator("#console")).to_be_visible()
        expect(page.locator("#loading")).to_be_hidden()

        manifest = page.locator("#manifest")
        expect(manifest).to_contain_text("finance (7 tools)")
        shown = manifest.inner_text()
        assert "\n" in shown and "\\n" not in shown and not shown.lstrip().startswith("{"), shown[:200]
        expect(page.locator("#manifest-json-box summary")).to_contain_text("as JSON")

        broken = page.locator("#servers tbody tr.server", has_text="inventory")
        expect(broken).to_contain_text("exited with code 3 before the MCP handshake")
        broken.locator("details.stderr summary").click()
        expect(broken.locator("details.stderr pre")).to_have_text("cannot open the inventory database")

        page.fill("#query", "xylophone tuning")
        page.click("#search-form button[type=submit]")
        expect(page.locator("#search-mode")).to_contain_text("No tool found for “xylophone tuning”")
        expect(page.locator("#search-results")).to_be_hidden()
        page.fill("#query", "convert currency")
        page.click("#search-form button[type=submit]")
        expect(page.locator("#search-results tbody tr.result").first).to_contain_text("finance__convert_currency")
