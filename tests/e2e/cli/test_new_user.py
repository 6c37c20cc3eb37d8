"""A new user's path, through the real command line: add a Python MCP server installed into the virtualenv
(`mcp-server-time`), an npx-style one (`@modelcontextprotocol/server-memory`, pinned in tests/package.json) and
one with a wrong script path. `toolsift check` names the broken one's cause, and the working ones are searchable.

The entries are the ones docs/add-your-mcp-servers.md shows (the front page links it), so the guide and this test
cannot drift apart.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support import ROOT, free_port
from tests.support.clients import npm_mcp_server
from tests.support.docs import section_blocks

TOOLSIFT = str(Path(sys.executable).parent / "toolsift")
GUIDE = ROOT / "docs" / "add-your-mcp-servers.md"


def guide_entry(heading: str, name: str) -> dict[str, Any]:
    """The `mcpServers` entry `name` of the first config under the guide's `## heading`."""
    config = json.loads(section_blocks(GUIDE, heading, "json")[0].code)
    entry: dict[str, Any] = config["mcpServers"][name]
    return entry


@pytest.fixture(scope="module")
def user_config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not (Path(sys.executable).parent / "mcp-server-time").exists():
        pytest.fail("mcp-server-time is a dev dependency: `make dev` puts it in .venv")
    memory_home = npm_mcp_server("@modelcontextprotocol/server-memory")
    folder = tmp_path_factory.mktemp("new-user")
    memory = guide_entry("`npx`", "memory")
    assert memory["command"] == "npx" and memory["args"][0] == "-y"
    memory |= {
        "args": ["--no", *memory["args"][1:]],  # never a download: the pinned install, found from its folder
        "cwd": str(memory_home),
        "env": {"MEMORY_FILE_PATH": str(folder / "memory.jsonl")},
        "autoApprove": [],  # pasted from another client, as it was
    }
    # deferred as the guide's "Loaded or deferred" part says, so that these small servers are searched
    how_to_defer = guide_entry("Loaded or deferred: why a small server stays loaded", "time")
    deferred = {"defer_loading": how_to_defer["defer_loading"]}
    config = {
        "providers": {"openai": {"api_key": "${OPENAI_API_KEY}"}},
        "mcpServers": {
            "time": guide_entry("A Python server in `.venv`", "time") | deferred,
            "memory": memory | deferred,
            "mine": guide_entry("Check it", "mine"),
        },
    }
    path = folder / "config.json"
    path.write_text(json.dumps(config))
    return path


def toolsift(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TOOLSIFT_URL": f"http://127.0.0.1:{free_port()}"}  # no gateway runs: start the servers
    env.pop("OPENAI_API_KEY", None)
    return subprocess.run([TOOLSIFT, *args], capture_output=True, text=True, timeout=300, cwd=cwd, env=env)


def test_check_names_the_broken_server_and_starts_the_others(user_config: Path) -> None:
    result = toolsift("check", "--config", str(user_config), cwd=user_config.parent)
    assert result.returncode == 1, result.stdout + result.stderr
    rows = {line.split()[0]: line.split() for line in result.stdout.splitlines()[2:5]}
    assert rows["time"][:3] == ["time", "stdio", "up"] and int(rows["time"][3]) >= 2
    assert rows["memory"][:3] == ["memory", "stdio", "up"] and int(rows["memory"][3]) >= 5
    mine = " ".join(rows["mine"])
    folder = user_config.parent
    assert mine.startswith("mine stdio down 0 down file not found: 'servers/my_server.py' is ")
    assert f"{folder / 'servers' / 'my_server.py'} (a relative path starts in the server's cwd, {folder})" in mine
    assert "exited with code 2" in mine
    assert "note: ignored what other MCP clients write, not used by toolsift: mcpServers.memory.autoApprove" in (
        result.stderr
    )
    assert "warning: providers.openai.api_key: environment variable OPENAI_API_KEY is not set" in result.stderr
    assert f"config: {user_config} (--config)" in result.stderr


@pytest.mark.parametrize(
    ("query", "server", "tool"),
    [("what time is it in Tokyo", "time", "time__get_current_time"),
     ("remember a person as an entity in the knowledge graph", "memory", "memory__create_entities")],
)  # fmt: skip
def test_the_working_servers_are_searchable(user_config: Path, query: str, server: str, tool: str) -> None:
    result = toolsift("search", query, "--server", server, "--config", str(user_config), cwd=user_config.parent)
    assert result.returncode == 0, result.stderr
    found = [line.split()[3] for line in result.stdout.splitlines()[1:]]  # rank, score, match, tool
    assert tool in found[:3], result.stdout
    assert "starting the MCP servers here instead" in result.stderr
