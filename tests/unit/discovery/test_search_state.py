"""Until meaning search is active, what shows search (/healthz, the admin API behind the console, `toolsift
search`) says it is keyword-only and why; the log says once when meaning search starts."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Sequence

import pytest
from fastmcp import FastMCP

from app.config import SemanticConfig, parse_config
from app.discovery.embeddings import VectorCache
from app.discovery.encoder import Array
from app.discovery.semantic import SemanticSearch
from app.engine.explained_search import search_mode
from app.engine.gateway import Gateway
from tests.support.mcp import wait_for
from tests.unit.discovery.test_fusion import ConceptBackend


class HeldBackend(ConceptBackend):
    """The stand-in model, embedding tools only once released: the window where search is keyword-only."""

    def __init__(self) -> None:
        self.release = threading.Event()

    def embed(self, texts: Sequence[str]) -> Array:
        self.release.wait(30)
        return super().embed(texts)

    def embed_queries(self, texts: Sequence[str]) -> Array:
        return super().embed(texts)


def test_the_reason_while_the_model_loads_and_when_search_is_off() -> None:
    loading = SemanticSearch(SemanticConfig(enabled=True))
    assert (
        loading.status()["reason"] == "the search model is loading; meaning search starts once the tools are embedded"
    )
    assert search_mode(loading, hybrid=False) == (
        "keywords only (the search model is loading; meaning search starts once the tools are embedded)"
    )
    off = SemanticSearch(SemanticConfig(enabled=False))
    assert search_mode(off, hybrid=False) == "keywords only (tool_discovery.semantic.enabled is false)"


async def test_keyword_only_until_the_tools_are_embedded_then_one_log_line(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="toolsift.semantic")
    server = FastMCP("shop")
    for name, description in (("totals", "Revenue totals."), ("forecast", "Weather for tomorrow.")):
        server.tool(name=name, description=description)(lambda: "ok")
    config = parse_config({"mcpServers": {"shop": {"command": "unused", "defer_loading": True}}}, environ={})
    gateway = Gateway(config, {"shop": server})
    backend = HeldBackend()
    semantic = gateway.semantic
    semantic.backend, semantic.cache, semantic.state = backend, VectorCache(None, "concepts"), "ready"
    await gateway.start()
    try:
        status = semantic.status()
        assert status["mode"] == "embedding"
        assert status["reason"] == "2 tools still to embed; meaning search starts once they are"
        assert search_mode(semantic, hybrid=False) == (
            "keywords only (2 tools still to embed; meaning search starts once they are)"
        )
        assert not [record for record in caplog.records if "semantic search active" in record.getMessage()]
        backend.release.set()
        await wait_for(lambda: semantic.status()["mode"] == "hybrid")
        assert "reason" not in semantic.status()
        semantic.track(())  # later catalog changes are quiet
        await asyncio.sleep(0.1)
        active = [record.getMessage() for record in caplog.records if "semantic search active" in record.getMessage()]
        assert active == ["semantic search active: search is by keywords and meaning from now on"]
    finally:
        backend.release.set()
        await gateway.stop()
