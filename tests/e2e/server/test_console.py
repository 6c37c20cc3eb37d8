"""The console in a real headless Chromium (see tests/support/browser.py) against a real `toolsift serve`, and the
CLI asking that gateway."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from openai import OpenAI

from tests.support import SERVERS, ScriptedUpstream, completion, free_port, served_gateway
from tests.support.browser import console_page

TOOLSIFT = str(Path(sys.executable).parent / "toolsift")
USER, ADMIN = "console-user-key", "console-admin-key"
SERVED: dict[str, Path] = {}  # each served gateway's config


@pytest.fixture(scope="module")
def gateway(scripted: ScriptedUpstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    def server(name: str, deferred: bool) -> dict[str, Any]:
        return {"command": sys.executable, "args": [str(SERVERS / f"{name}.py")], "defer_loading": deferred}

    config = {
        "providers": {"up": {"base_url": scripted.base_url, "api_key": "sk-scripted", "max_retries": 0}},
        "models": {"fast": {"provider": "up", "model": "scripted"}},
        "mcpServers": {"weather": server("weather", False), "finance": server("finance", True),
                       "notes": server("notes", True), "ghost": {"command": "toolsift-no-such-server"}},
        "auth": {"api_keys": [USER], "admin_keys": [ADMIN]},
    }  # fmt: skip
    path = tmp_path_factory.mktemp("console") / "config.json"
    path.write_text(json.dumps(config))
    with served_gateway(path, free_port()) as base:
        SERVED[base] = path
        yield base


def test_a_link_with_the_key_opens_the_console_and_leaves_the_address_bar(gateway: str) -> None:
    """`toolsift demo` beyond loopback prints the console's link with its admin key in the fragment."""
    with console_page(gateway, f"/console#key={ADMIN}") as page:
        from playwright.sync_api import expect

        expect(page.locator("#servers tbody tr.server")).to_have_count(4)
        expect(page.locator("#key-form")).to_be_hidden()
        assert ADMIN not in page.url and page.url.endswith("/console")
        assert page.evaluate("sessionStorage.getItem('toolsift.adminKey')") == ADMIN


def chat_missing_a_tool(base: str, scripted: ScriptedUpstream) -> str:
    """A request whose model searched for something no tool does; returns its request id."""
    scripted.script(completion(calls=[("search_tools", {"query": "xylophone tuning"})]), completion("No such tool."))
    client = OpenAI(base_url=f"{base}/v1", api_key=USER, max_retries=0)
    raw = client.chat.completions.with_raw_response.create(
        model="fast", messages=[{"role": "user", "content": "tune my xylophone"}]
    )
    assert raw.parse().choices[0].message.content == "No such tool."
    return raw.headers["x-request-id"]


def test_console_in_headless_chromium(gateway: str, scripted: ScriptedUpstream, tmp_path: Path) -> None:
    with console_page(gateway) as page:
        from PIL import Image, ImageStat
        from playwright.sync_api import expect

        # Keys are on: the page asks for the admin key before it shows anything.
        expect(page.locator("#key-form")).to_be_visible()
        expect(page.locator("#key-message")).to_contain_text("admin key")
        page.fill("#key", ADMIN)
        page.click("#key-form button[type=submit]")
        servers = page.locator("#servers tbody tr.server")
        expect(servers).to_have_count(4)
        expect(page.locator("#servers")).to_contain_text("finance")
        # A down server is down in its status too, in the error colour: never "loaded" in green.
        ghost = servers.filter(has_text="ghost").locator("td")
        expect(ghost.nth(4)).to_have_text("down")
        error_colour = page.evaluate("getComputedStyle(document.querySelector('#servers td.error')).color")
        assert ghost.nth(4).evaluate("cell => getComputedStyle(cell).color") == error_colour
        expect(servers.filter(has_text="weather").locator("td").nth(4)).to_have_text("loaded")
        expect(page.locator("#tools tbody tr.tool").first).to_be_visible()
        expect(page.locator("#manifest-tokens")).to_contain_text("search_tools definition")

        page.fill("#query", "convert currency")
        page.click("#search-form button[type=submit]")
        first = page.locator("#search-results tbody tr.result").first
        expect(first).to_contain_text("finance__convert_currency")
        expect(first).to_contain_text("name: convert, currency")

        request_id = chat_missing_a_tool(gateway, scripted)  # while the page is open: it refreshes itself
        missed = page.locator("#requests tbody tr.miss", has_text=request_id)
        expect(missed).to_contain_text("xylophone tuning", timeout=20_000)
        expect(missed).to_contain_text("likely miss: found nothing")
        assert page.evaluate("sessionStorage.getItem('toolsift.adminKey')") == ADMIN
        assert ADMIN not in page.url

        shot = page.screenshot(full_page=True)
        (tmp_path / "console.png").write_bytes(shot)
        image = Image.open(io.BytesIO(shot)).convert("L")
        assert image.size[0] == 1280 and image.size[1] > 900
        assert ImageStat.Stat(image).stddev[0] > 10, "the screenshot is blank"


def test_the_playground_searches_several_queries_as_one_call(gateway: str) -> None:
    with console_page(gateway) as page:
        from playwright.sync_api import expect

        page.fill("#key", ADMIN)
        page.click("#key-form button[type=submit]")
        page.fill("#query", "convert currency\ncreate a note")
        page.click("#search-form button[type=submit]")
        results = page.locator("#search-results tbody tr.result")
        expect(results.filter(has_text="create a note").first).to_contain_text("notes__create_note")
        expect(results.first).to_contain_text("convert currency")
        expect(page.locator("#search-mode")).to_contain_text("for 2 queries")
        expect(page.locator("#search-text")).to_contain_text("for 2 queries:")


def test_cli_search_of_several_queries_asks_the_running_gateway(gateway: str, tmp_path: Path) -> None:
    result = subprocess.run(
        [TOOLSIFT, "search", "convert currency", "create a note", "-k", "2", "--url", gateway, "--admin-key", ADMIN,
         "--config", str(tmp_path / "absent.json")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["#", "query", "score", "match", "tool", "description"]
    assert len(lines) == 5, "each query's own top 2"
    assert lines[1].split()[:3] == ["1", "convert", "currency"] and "finance__convert_currency" in lines[1]
    assert lines[3].split()[:4] == ["1", "create", "a", "note"] and "notes__create_note" in lines[3]


def test_cli_search_finds_the_gateway_serving_its_config_on_any_port(gateway: str) -> None:
    """`make demo PORT=8100`, then `toolsift search` from the config's folder: the running gateway answers, with no
    URL passed (it noted its URL and config in toolsift's folder), where the command looked at port 8000 and then
    started every server itself."""
    config = SERVED[gateway]
    environ = {name: value for name, value in os.environ.items() if name != "TOOLSIFT_URL"}
    result = subprocess.run(
        [TOOLSIFT, "search", "convert currency", "--admin-key", ADMIN], cwd=config.parent, env=environ,
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert f"answered by the gateway at {gateway}" in result.stderr and "connecting" not in result.stderr
    assert "finance__convert_currency" in result.stdout


def test_cli_search_asks_the_running_gateway(gateway: str, tmp_path: Path) -> None:
    result = subprocess.run(
        [TOOLSIFT, "search", "convert currency", "--explain", "--url", gateway, "--admin-key", ADMIN,
         "--config", str(tmp_path / "absent.json")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert f"answered by the gateway at {gateway}" in result.stderr and "connecting" not in result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["#", "score", "keywords", "meaning", "match", "tool", "description"]
    assert lines[1].split()[5] == "finance__convert_currency"
    assert lines[2].strip().startswith("matched name: convert, currency")
    tools = subprocess.run(
        [TOOLSIFT, "tools", "--tool-set", "nope", "--url", gateway], capture_output=True, text=True, timeout=60,
        env={"TOOLSIFT_ADMIN_KEY": ADMIN, "PATH": ""},
    )  # fmt: skip
    assert tools.returncode == 2 and "Unknown tool_set 'nope'" in tools.stderr
    server = subprocess.run(
        [TOOLSIFT, "tools", "--server", "nope", "--url", gateway], capture_output=True, text=True, timeout=60,
        env={"TOOLSIFT_ADMIN_KEY": ADMIN, "PATH": ""},
    )  # fmt: skip
    assert server.returncode == 2 and "unknown server 'nope'; servers: " in server.stderr and "notes" in server.stderr
    assert server.stdout == ""


def test_cli_falls_back_with_a_note_when_the_gateway_refuses(gateway: str, tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"mcpServers": {}}))
    result = subprocess.run(
        [TOOLSIFT, "manifest", "--url", gateway, "--admin-key", USER, "--config", str(config)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    note = [line for line in result.stderr.splitlines() if line.startswith("note:")]
    assert len(note) == 1 and "not an admin key" in note[0] and "starting the MCP servers here" in note[0]
    assert result.stdout.startswith("Nothing is deferred"), "answered locally from the (empty) config"


def test_what_search_learned_shows_in_the_playground_and_the_cli(
    gateway: str, scripted: ScriptedUpstream, tmp_path: Path
) -> None:
    """A chat that searched and called a tool successfully: the pair shows as "learned from 1 use" beside the tool,
    in the console's playground and in `toolsift search --explain`."""
    query = "swap dollars for euros"
    converted = {"name": "finance__convert_currency", "arguments": {"amount": 100, "from_currency": "USD",
                                                                   "to_currency": "EUR"}}  # fmt: skip
    scripted.script(
        completion(calls=[("search_tools", {"query": query})]),
        completion(calls=[("call_tool", converted)]),
        completion("Converted."),
    )
    client = OpenAI(base_url=f"{gateway}/v1", api_key=USER, max_retries=0)
    answer = client.chat.completions.create(model="fast", messages=[{"role": "user", "content": "100 USD in EUR?"}])
    assert answer.choices[0].message.content == "Converted."
    with console_page(gateway) as page:
        from playwright.sync_api import expect

        page.fill("#key", ADMIN)
        page.click("#key-form button[type=submit]")
        page.fill("#query", query)
        page.click("#search-form button[type=submit]")
        row = page.locator("#search-results tbody tr.result", has_text="finance__convert_currency").first
        expect(row).to_contain_text("learned from 1 use")
    result = subprocess.run(
        [TOOLSIFT, "search", query, "--explain", "--url", gateway, "--admin-key", ADMIN,
         "--config", str(tmp_path / "absent.json")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "learned from 1 use" in result.stdout
