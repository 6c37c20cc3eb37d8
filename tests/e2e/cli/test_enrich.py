"""`toolsift enrich` as a user runs it: a config file, the finance example server over stdio, and a scripted
upstream over HTTP that writes the enrichment; then `toolsift search` finds a tool by words only its enrichment
holds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import ROOT, ScriptedUpstream, completion, example_server, free_port
from tests.support.enrich import NEST_EGG, finance_written

TOOLSIFT = [sys.executable, "-m", "app.cli"]  # the `toolsift` script of this checkout (run from its root)


@pytest.fixture(scope="module")
def upstream() -> Iterator[ScriptedUpstream]:
    server = ScriptedUpstream().start()
    # Every call is answered for every tool: the gateway reads the tools each batch asked about.
    server.fallback = completion(finance_written(), usage=(400, 300))
    yield server
    server.stop()


def configure(tmp_path: Path, upstream: ScriptedUpstream) -> Path:
    config = {
        "providers": {"up": {"base_url": upstream.base_url, "api_key": "sk-up-key", "max_retries": 0}},
        "models": {"writer": {"provider": "up", "model": "w-1"}},
        "mcpServers": {"finance": example_server("finance", defer_loading=True)},
        "tool_discovery": {"semantic": {"enabled": False}, "enrich": {"model": "writer", "batch_size": 4}},
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return path


def run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The command with its own toolsift home (the cache) and no gateway to ask."""
    env = {**os.environ, "TOOLSIFT_HOME": str(tmp_path / "home"), "TOOLSIFT_URL": f"http://127.0.0.1:{free_port()}"}
    return subprocess.run([*TOOLSIFT, *args], capture_output=True, text=True, timeout=120, cwd=ROOT, env=env)


def test_enrich_asks_once_per_batch_caches_and_search_finds_by_the_phrasings(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    config = str(configure(tmp_path, upstream))
    upstream.script()  # forget earlier requests

    before = run(tmp_path, "search", NEST_EGG, "--config", config)
    assert "finance__compound_interest" not in before.stdout

    dry = run(tmp_path, "enrich", "--config", config, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "would ask about 7 tools in 2 calls of up to 4" in dry.stdout
    assert "call 2: finance__compound_interest, finance__portfolio_value, finance__estimate_income_tax" in dry.stdout
    assert upstream.requests == [], "a dry run calls nothing"

    done = run(tmp_path, "enrich", "--config", config)
    assert done.returncode == 0, done.stderr
    assert "enriched 7 tools in 2 calls, 1,400 tokens; 0 skipped" in done.stdout
    assert "enriched batch 1/2: 4/7 tools" in done.stderr, "plain progress lines when not on a terminal"
    assert len(upstream.requests) == 2
    sent = upstream.requests[0]["messages"][-1]["content"]
    assert '"name": "finance__convert_currency"' in sent and "sk-up-key" not in json.dumps(upstream.requests)
    assert upstream.requests[0]["model"] == "w-1"

    again = run(tmp_path, "enrich", "--config", config)
    assert again.returncode == 0 and "nothing to ask: every deferred tool is enriched" in again.stderr
    assert len(upstream.requests) == 2, "the cache answers a second run"

    after = run(tmp_path, "search", NEST_EGG, "--config", config)
    assert after.returncode == 0, after.stderr
    first = next(line for line in after.stdout.splitlines() if line.lstrip().startswith("1 "))
    assert "finance__compound_interest" in first


def test_the_token_budget_stops_a_run_and_the_next_goes_on(tmp_path: Path, upstream: ScriptedUpstream) -> None:
    config = str(configure(tmp_path, upstream))
    upstream.script()
    stopped = run(tmp_path, "enrich", "--config", config, "--max-tokens", "1000")
    assert stopped.returncode == 1
    assert "stopped: token budget reached: 700 of 1,000 tokens spent" in stopped.stderr
    assert "3 tools left for the next run" in stopped.stderr and len(upstream.requests) == 1
    rest = run(tmp_path, "enrich", "--config", config)
    assert rest.returncode == 0 and "enriched 3 tools in 1 calls" in rest.stdout
