"""docs/add-your-mcp-servers.md: every config it shows (a json block with `mcpServers`, not marked not-run) passes
`toolsift check` with its servers up, and what the guide quotes `check` and `search` saying is what they say."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import free_port
from tests.support.docs import Block, blocks, section_blocks
from tests.support.gateway import ROOT

GUIDE = ROOT / "docs" / "add-your-mcp-servers.md"
CONFIGS = [block for block in blocks(GUIDE) if block.language == "json" and "mcpServers" in block.code]
CHECKED = [block for block in CONFIGS if block.not_run is None]
TOOLSIFT = str(Path(sys.executable).parent / "toolsift")


def toolsift(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The command as a user runs it with no gateway up: it starts the servers itself, with no provider key."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("OPENAI_", "TOOLSIFT_URL"))}
    env["TOOLSIFT_URL"] = f"http://127.0.0.1:{free_port()}"
    return subprocess.run([TOOLSIFT, *args], capture_output=True, text=True, timeout=300, cwd=cwd, env=env)


def config_folder(block: Block, folder: Path) -> Path:
    """The block as a config.json in a folder of its own that, like the project's, holds the example servers."""
    (folder / "examples").symlink_to(ROOT / "examples")
    (folder / "config.json").write_text(block.code)
    return folder


@pytest.mark.parametrize("block", CHECKED, ids=[block.id for block in CHECKED])
def test_the_config_passes_check_with_every_server_up(block: Block, tmp_path: Path) -> None:
    folder = config_folder(block, tmp_path)
    result = toolsift("check", "--config", "config.json", cwd=folder)
    shown = result.stdout + result.stderr
    assert result.returncode == 0, shown
    assert result.stdout.startswith("config: ok"), shown
    servers = json.loads(block.code)["mcpServers"]
    rows = {line.split()[0]: line.split() for line in result.stdout.splitlines()[2 : 2 + len(servers)]}
    for name, entry in servers.items():
        assert rows[name][2] == "up" and int(rows[name][3]) >= 1, shown
        if entry.get("defer_loading") is True:
            assert rows[name][4] == "deferred", shown
    if "autoApprove" in block.code:  # the pasted block: what other clients write is named and ignored
        note = "note: ignored what other MCP clients write, not used by toolsift: mcpServers.time.autoApprove, "
        assert note + "mcpServers.time.alwaysAllow, mcpServers.time.timeout" in result.stderr


def test_the_guide_checks_a_config_of_every_kind_it_can_run_here() -> None:
    commands = {json.loads(block.code)["mcpServers"][name].get("command") for block in CHECKED
                for name in json.loads(block.code)["mcpServers"]}  # fmt: skip
    assert {"mcp-server-time", "python"} <= commands
    reasons = {block.not_run for block in CONFIGS if block.not_run}
    assert any("uvx" in reason for reason in reasons) and any("npx" in reason for reason in reasons)  # type: ignore[operator]


def test_a_small_server_stays_loaded_and_search_says_where_its_tools_are(tmp_path: Path) -> None:
    first = section_blocks(GUIDE, "A Python server in `.venv`", "json")[0]
    folder = config_folder(first, tmp_path)
    check = toolsift("check", "--config", "config.json", cwd=folder)
    guide = " ".join(GUIDE.read_text().split())
    quoted = "time loaded auto: 281 tokens of tools without defer_loading <= 4,000 (this server: 281 tokens)"
    assert quoted in guide
    assert quoted in " ".join(check.stdout.split()), check.stdout
    search = toolsift("search", "current time in Tokyo", "--config", "config.json", cwd=folder)
    said = section_blocks(GUIDE, "Loaded or deferred: why a small server stays loaded", "")[0].code
    for line in said.splitlines():
        assert line in search.stdout + search.stderr, search.stdout + search.stderr
