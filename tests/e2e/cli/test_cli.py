"""Every `toolsift` subcommand through the real entry point, as a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from app.config import load_config
from app.discovery.cache import mcp_groups
from app.discovery.search import Discovery, rank_tools
from app.discovery.semantic import SemanticSearch
from app.mcp.client.catalog_build import build_catalog
from tests.support import ROOT, SERVERS, free_port, load_example

TOOLSIFT = str(Path(sys.executable).parent / "toolsift")


@pytest.fixture(scope="module")
def small_config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    config = {
        "providers": {"openai": {"api_key": "${OPENAI_API_KEY}"}, "claude": {"type": "anthropic", "api_key": "x"}},
        "default_provider": "openai",
        "models": {"fast": {"provider": "openai", "model": "gpt-4.1-mini", "fallbacks": ["claude"]},
                   "claude": {"provider": "claude", "model": "claude-sonnet-4-5"}},
        "mcpServers": {
            "weather": {"command": "python", "args": [str(SERVERS / "weather.py")]},
            "finance": {"command": "python", "args": [str(SERVERS / "finance.py")], "defer_loading": True},
        },
        "tool_sets": {"money": {"servers": {"finance": ["convert_currency"]}}},
    }  # fmt: skip
    path = tmp_path_factory.mktemp("cli") / "config.json"
    path.write_text(json.dumps(config))
    return path


def run(*args: str) -> subprocess.CompletedProcess[str]:
    """The command with no gateway to ask (a closed port), so `tools`, `manifest` and `search` start the servers."""
    env = {**os.environ, "TOOLSIFT_URL": f"http://127.0.0.1:{free_port()}"}
    return subprocess.run([TOOLSIFT, *args], capture_output=True, text=True, timeout=120, cwd=ROOT, env=env)


def test_help_lists_every_subcommand() -> None:
    result = run("--help")
    assert result.returncode == 0
    for command in ("serve", "demo", "check", "tools", "manifest", "search", "models"):
        assert command in result.stdout
    assert "--config" in run("tools", "--help").stdout


def test_check_reports_every_server(small_config: Path) -> None:
    result = run("check", "--config", str(small_config))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "config: ok"
    assert lines[1].split() == ["server", "transport", "state", "tools", "status", "error"]
    assert lines[2].split() == ["weather", "stdio", "up", "4", "loaded"]
    assert lines[3].split() == ["finance", "stdio", "up", "7", "deferred"]
    assert "connected 2/2" in result.stderr, "progress lines when not on a terminal"


def test_check_fails_on_a_dead_server_and_on_a_bad_config(tmp_path: Path, small_config: Path) -> None:
    config = json.loads(small_config.read_text())
    config["mcpServers"]["ghost"] = {"command": "toolsift-no-such-server", "defer_loading": True}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    result = run("check", "--config", str(path))
    assert result.returncode == 1
    ghost = next(line for line in result.stdout.splitlines() if line.startswith("ghost"))
    assert "down" in ghost and len(ghost.split()) > 5, "the error is shown"
    path.write_text(json.dumps({"mcpServers": {"x": {}}}))
    bad = run("check", "--config", str(path))
    assert bad.returncode == 2 and "mcpServers.x: set exactly one of" in bad.stderr


def test_tools_lists_names_status_and_respects_tool_sets(small_config: Path) -> None:
    result = run("tools", "--config", str(small_config), "--tool-set", "money")
    assert result.returncode == 0, result.stderr
    rows = [line.split()[:3] for line in result.stdout.splitlines()[1:]]
    assert rows == [["finance__convert_currency", "finance", "deferred"]]
    unknown = run("tools", "--config", str(small_config), "--tool-set", "nope")
    assert unknown.returncode == 2 and "Available tool sets: money" in unknown.stderr


def test_tools_with_an_unknown_server_exits_2_naming_the_servers(small_config: Path) -> None:
    result = run("tools", "--config", str(small_config), "--server", "nope")
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.splitlines()[-1] == "toolsift: unknown server 'nope'; servers: weather, finance"
    assert "starting the MCP servers" in result.stderr, "no gateway runs here: the note says so, then the answer"
    known = run("tools", "--config", str(small_config), "--server", "weather")
    assert known.returncode == 0 and len(known.stdout.splitlines()) == 1 + 4


def test_manifest_prints_the_search_tools_description_and_tokens(small_config: Path) -> None:
    result = run("manifest", "--config", str(small_config))
    assert result.returncode == 0, result.stderr
    assert "<manifest>\n- finance (7 tools): convert_currency" in result.stdout
    assert "search_tools definition:" in result.stderr and "tokens" in result.stderr
    note = next(line for line in result.stderr.splitlines() if line.startswith("note:"))
    assert "no gateway answered at http://127.0.0.1:" in note and "starting the MCP servers here instead" in note


def test_models_lists_routes(small_config: Path) -> None:
    result = run("models", "--config", str(small_config))
    assert result.returncode == 0
    lines = result.stdout.splitlines()
    assert lines[1].split() == ["fast", "openai", "openai", "gpt-4.1-mini", "claude"]
    assert lines[2].split() == ["claude", "claude", "anthropic", "claude-sonnet-4-5", "-"]
    assert "provider 'openai' unchanged" in result.stdout


async def _in_process_ranking(query: str, k: int) -> list[str]:
    from fastmcp import Client

    config = load_config(ROOT / "config.json", environ={})
    listings: dict[str, Any] = {}
    for name, server in config.mcp_servers.items():
        module = load_example(Path(server.args[0]).stem)
        async with Client(module.mcp) as client:
            listings[name] = await client.list_tools()
    catalog = build_catalog(config, listings, version=1)
    semantic = SemanticSearch(config.tool_discovery.semantic, config.base_dir)
    semantic.ensure_now(catalog.tools.values())
    semantic.prepare_now(query)
    deferred = [entry for entry in catalog.tools.values() if entry.deferred]  # what the model's search covers
    discovery = Discovery.build(mcp_groups(catalog, deferred), semantic=semantic)
    return [entry.name for entry in rank_tools(discovery, query, None, k)]


async def test_cli_search_agrees_with_the_library_ranking() -> None:
    query = "free time in my calendar next week"
    result = run("search", query, "-k", "4", "--config", str(ROOT / "config.json"))
    assert result.returncode == 0, result.stderr
    assert "search: hybrid" in result.stderr
    lines = result.stdout.strip().splitlines()
    assert lines[0].split() == ["#", "score", "match", "tool", "description"]
    printed = [line.split()[3] for line in lines[1:]]
    assert printed == await _in_process_ranking(query, 4)
    assert printed[0] == "calendar__find_free_slots"


def test_cli_search_finds_by_meaning_on_the_demo() -> None:
    result = run("search", "save a note", "--explain", "--config", str(ROOT / "config.json"))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert lines[0].split() == ["#", "score", "keywords", "meaning", "match", "tool", "description"]
    assert lines[1].split()[5] == "notes__create_note"


def test_cli_search_of_several_queries_ranks_each_as_one_call_would() -> None:
    result = run("search", "save a note", "convert currency", "-k", "1", "--config", str(ROOT / "config.json"))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert lines[0].split() == ["#", "query", "score", "match", "tool", "description"]
    assert lines[1].split()[:4] == ["1", "save", "a", "note"] and lines[1].split()[6] == "notes__create_note"
    assert lines[2].split()[:3] == ["1", "convert", "currency"] and lines[2].split()[5] == "finance__convert_currency"


def test_cli_search_names_a_loaded_tool_that_answers_the_query() -> None:
    # Weather's tools are loaded from the start on the demo: the model's search does not cover them, and the
    # operator is told that the model has the tool for "storm warnings" already.
    result = run("search", "storm warnings", "--config", str(ROOT / "config.json"))
    assert result.returncode == 0, result.stderr
    assert "Loaded from the start" in result.stdout and "weather__get_alerts (#1" in result.stdout
