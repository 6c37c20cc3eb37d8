"""`toolsift search` ranks exactly as search_tools and bench/retrieval.py do (one code path)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from app.catalog import build_catalog
from app.config import load_config
from app.discovery.search import Discovery, rank_tools
from app.request_tools import mcp_groups
from tests.conftest import ROOT, load_example


async def _in_process_ranking(query: str, k: int) -> list[str]:
    from fastmcp import Client

    config = load_config(ROOT / "config.json", environ={})
    listings = {}
    for name, server in config.mcp_servers.items():
        module = load_example(Path(server.args[0]).stem)
        async with Client(module.mcp) as client:
            listings[name] = await client.list_tools()
    catalog = build_catalog(config, listings, version=1)
    discovery = Discovery.build(mcp_groups(catalog, list(catalog.tools.values())))
    return [entry.name for entry in rank_tools(discovery, query, None, k)]


async def test_cli_search_agrees_with_the_library_ranking() -> None:
    query = "free time in my calendar next week"
    result = subprocess.run(
        [
            str(Path(sys.executable).parent / "toolsift"),
            "search",
            query,
            "-k",
            "4",
            "--config",
            str(ROOT / "config.json"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert lines[0].split() == ["#", "score", "tool", "description"]
    printed = [line.split()[2] for line in lines[1:]]
    assert printed == await _in_process_ranking(query, 4)
    assert printed[0] == "calendar__find_free_slots"
