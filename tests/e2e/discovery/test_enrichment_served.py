"""`tool_discovery.enrich` in a served gateway: after start-up it asks the configured model about the deferred
tools in the background (no request waits), and the model's own search finds a tool by words only its enrichment
holds once the answers arrive; a restart asks nothing again."""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from tests.support import ScriptedUpstream, completion, example_server, free_port, served_gateway
from tests.support.enrich import NEST_EGG, finance_written


def serving(config: Path, home: Path) -> contextlib.AbstractContextManager[str]:
    """`toolsift serve` on `config`, with its own toolsift home; yields its base URL once up."""
    return served_gateway(config, free_port(), env={**os.environ, "TOOLSIFT_HOME": str(home)})


def until(condition: Callable[[], bool], failure: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, failure
        time.sleep(0.1)


def first_found(base: str) -> str | None:
    """The first tool the console's search (the model's, over every tool) ranks for NEST_EGG."""
    results = httpx.get(f"{base}/admin/search", params={"query": NEST_EGG}, timeout=10).json()["results"]
    return results[0]["name"] if results else None


def test_the_gateway_enriches_in_the_background_and_search_uses_it(tmp_path: Path) -> None:
    upstream = ScriptedUpstream().start()
    try:
        upstream.fallback = completion(finance_written())
        config: dict[str, Any] = {
            "providers": {"up": {"base_url": upstream.base_url, "api_key": "sk-up", "max_retries": 0}},
            "models": {"fast": {"provider": "up", "model": "chat-1"}, "writer": {"provider": "up", "model": "w-1"}},
            "mcpServers": {"finance": example_server("finance", defer_loading=True)},
            "tool_discovery": {"semantic": {"enabled": False}, "enrich": {"model": "writer", "batch_size": 4}},
        }
        path = tmp_path / "config.json"
        path.write_text(json.dumps(config))
        with serving(path, tmp_path / "home") as base:
            until(lambda: first_found(base) == "finance__compound_interest", "enrichment never reached search")
            assert [request["model"] for request in upstream.requests] == ["w-1", "w-1"], "two batches of 4 and 3"
            upstream.script(
                completion(calls=[("search_tools", {"query": NEST_EGG})]), completion("It is compound_interest.")
            )
            body = {"model": "fast", "messages": [{"role": "user", "content": "How big will my savings get?"}]}
            reply = httpx.post(f"{base}/v1/chat/completions", json=body, timeout=30)
            assert reply.status_code == 200, reply.text
            found = upstream.requests[1]["messages"][-1]["content"]
            assert found.splitlines()[0] == "Found 1 tool: finance__compound_interest.", found
            enrichment = httpx.get(f"{base}/healthz", timeout=5).json()["search"]["enrichment"]
            assert enrichment["model"] == "writer" and enrichment["enriched"] == 7 and enrichment["skipped"] == 0
        upstream.script()
        with serving(path, tmp_path / "home") as base:  # a restart
            assert first_found(base) == "finance__compound_interest"
            assert upstream.requests == [], "the cache answers: nothing is asked again"
    finally:
        upstream.stop()
