"""Enrichment by the configured model: deferred tools asked about in batches, in the background after start-up,
cached on disk and not asked again; a bad answer retried once and then skipped with a log line; the token budget;
what is sent upstream (redacted); and what the enrichment does to the model's own search."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from app.cli.enrich import dry_run
from app.common.errors import GatewayError
from app.config import Config, parse_config
from app.core.model import Delta, UpstreamRequest
from app.discovery.enrichment import EnrichmentCache
from app.engine.enrichment import Enricher, batch_tokens, model_key, plan
from app.engine.gateway import Gateway
from app.providers import Route
from tests.support import UPSTREAM
from tests.support.engine import ScriptedProvider, answer_text, ask, calls, said
from tests.support.enrich import ONLY_IN_PHRASINGS, EnrichingUpstream, answer, many_tools


def config(tmp_path: Path, **enrich: Any) -> Config:
    """A chat model `fast` (provider `up`) and the enriching model `writer` (provider `writer`), one server `ops`
    deferred, keyword search, enrichment in the background into `tmp_path`."""
    providers = {
        name: {"base_url": UPSTREAM, "api_key": f"sk-{name}-secret", "max_retries": 0} for name in ("up", "writer")
    }
    return parse_config(
        {
            "providers": {name: {**spec, "deferral": "tools"} for name, spec in providers.items()},
            "models": {
                "fast": {"provider": "up", "model": "chat-model"},
                "writer": {"provider": "writer", "model": "w-1"},
            },
            "mcpServers": {"ops": {"command": "unused", "defer_loading": True}},
            "tool_discovery": {
                "semantic": {"enabled": False},
                "enrich": {"model": "writer", "batch_size": 10, "cache_dir": str(tmp_path), **enrich},
            },
            "mcp_limits": {"rebuild_interval_seconds": 0.01},
        },
        environ={},
    )


async def started(
    cfg: Config, writer: EnrichingUpstream, chat: ScriptedProvider | None = None, **server: Any
) -> Gateway:
    gateway = Gateway(cfg, {"ops": many_tools(50, **server)}, {"writer": writer, "up": chat or ScriptedProvider("up")})
    await gateway.start()
    if gateway.enricher is not None:  # none with `background: false`
        await gateway.enricher.settled()
    return gateway


async def search_result(gateway: Gateway, chat: ScriptedProvider, query: str) -> str:
    """The `search_tools` result the model reads for `query`."""
    chat.script += [calls(("search_tools", {"query": query})), said("done")]
    await answer_text(gateway, ask("do it"))
    return chat.rounds[-1].messages[-1].text()


def first_found(result: str) -> str:
    return next(line[2:].split(" ")[0] for line in result.splitlines() if line.startswith("- "))


async def test_fifty_tools_are_enriched_in_batches_cached_and_not_asked_again(tmp_path: Path) -> None:
    writer, chat = EnrichingUpstream("writer"), ScriptedProvider("up")
    gateway = await started(config(tmp_path), writer, chat)
    try:
        assert [len(names) for names in writer.calls] == [10] * 5, "50 tools, 10 a call, each asked once"
        assert len({name for names in writer.calls for name in names}) == 50
        assert gateway.enrichments is not None and len(gateway.enrichments) == 50
        # No request waited: the search found the enrichment once it arrived.
        assert first_found(await search_result(gateway, chat, ONLY_IN_PHRASINGS)) == "ops__task_07"
    finally:
        await gateway.stop()
    cached = list(tmp_path.glob("*.jsonl"))
    assert len(cached) == 1 and len(cached[0].read_text().splitlines()) == 51, "a header and a line per tool"

    again, chat = EnrichingUpstream("writer"), ScriptedProvider("up")
    gateway = await started(config(tmp_path), again, chat)  # a restart
    try:
        assert again.calls == [], "a restart asks nothing again"
        assert first_found(await search_result(gateway, chat, ONLY_IN_PHRASINGS)) == "ops__task_07"
    finally:
        await gateway.stop()

    changed = EnrichingUpstream("writer")
    gateway = await started(config(tmp_path), changed, changed=3)  # one tool's description changed
    try:
        assert changed.calls == [["ops__task_03"]], "only the tool whose text changed"
    finally:
        await gateway.stop()


async def test_without_enrichment_the_phrasings_find_nothing(tmp_path: Path) -> None:
    chat = ScriptedProvider("up")
    gateway = await started(config(tmp_path, background=False), EnrichingUpstream("writer"), chat)
    try:
        assert "No tools found" in await search_result(gateway, chat, ONLY_IN_PHRASINGS)
    finally:
        await gateway.stop()


def _enricher(writer: EnrichingUpstream, tmp_path: Path, max_tokens: int | None = None) -> Enricher:
    return Enricher(Route(writer, "w-1"), EnrichmentCache(tmp_path, "writer/w-1"), max_tokens)


async def _entries(tmp_path: Path, count: int = 10) -> list[Any]:
    gateway = Gateway(config(tmp_path, background=False), {"ops": many_tools(count)}, {"writer": EnrichingUpstream()})
    await gateway.mcp.start()
    try:
        return [entry for entry in gateway.mcp.catalog.tools.values() if entry.deferred]
    finally:
        await gateway.mcp.stop()


async def test_a_bad_answer_is_retried_once_then_its_tools_are_skipped_with_a_log_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    writer = EnrichingUpstream("writer", reply=lambda names, call: "Sure! Here are the tools: {broken")
    enricher = _enricher(writer, tmp_path)
    with caplog.at_level(logging.WARNING, logger="toolsift.enrich"):
        outcome = await enricher.run(plan(await _entries(tmp_path), enricher.cache, 10))
    assert len(writer.calls) == 2 and writer.calls[0] == writer.calls[1], "asked, then asked again once"
    assert outcome.enriched == 0 and len(outcome.skipped) == 10
    lines = [record.getMessage() for record in caplog.records if "skipped" in record.getMessage()]
    assert len(lines) == 10
    assert lines[0].startswith("enrichment: skipped ops__task_00: the answer was not JSON")


async def test_the_retry_asks_only_about_the_tools_missing_or_malformed(tmp_path: Path) -> None:
    def reply(names: list[str], call: int) -> str:
        if call == 1:  # one tool left out, one with too few phrasings
            return answer(names[2:])[:-1] + ', "ops__task_01": {"purpose": "x", "phrasings": ["only one"]}}'
        return answer(names)

    writer = EnrichingUpstream("writer", reply=reply)
    enricher = _enricher(writer, tmp_path)
    outcome = await enricher.run(plan(await _entries(tmp_path), enricher.cache, 10))
    assert writer.calls[1] == ["ops__task_00", "ops__task_01"]
    assert outcome.enriched == 10 and not outcome.skipped and outcome.calls == 2


async def test_a_failing_upstream_is_retried_once_and_three_failed_batches_stop_the_run(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    class Down(EnrichingUpstream):
        async def complete(self, request: UpstreamRequest) -> Delta:
            await super().complete(request)
            raise GatewayError(502, "upstream unreachable")

    writer = Down("writer")
    enricher = _enricher(writer, tmp_path)
    with caplog.at_level(logging.WARNING, logger="toolsift.enrich"):
        outcome = await enricher.run(plan(await _entries(tmp_path, 50), enricher.cache, 10))
    assert len(writer.calls) == 6, "three batches, each asked twice, then it stops"
    assert "upstream may be down" in outcome.stopped
    assert "ops__task_00" in outcome.skipped and "upstream failed" in outcome.skipped["ops__task_00"]


async def test_the_token_budget_stops_the_run_and_says_so(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    writer = EnrichingUpstream("writer")
    enricher = _enricher(writer, tmp_path)
    planned = plan(await _entries(tmp_path, 50), enricher.cache, 10)
    # Usage reported is 150 a call: two batches fit, the third's estimate does not.
    enricher.max_tokens = 150 * 2 + batch_tokens(planned.batches[2]) - 1
    with caplog.at_level(logging.WARNING, logger="toolsift.enrich"):
        outcome = await enricher.run(planned)
    assert len(writer.calls) == 2 and outcome.enriched == 20
    assert outcome.stopped.startswith("token budget reached") and "30 tools left" in outcome.stopped
    assert any("enrichment stopped: token budget reached" in record.getMessage() for record in caplog.records)
    resumed = plan(await _entries(tmp_path, 50), enricher.cache, 10)
    assert len(resumed.jobs) == 30, "the next run starts where this one stopped"


async def test_a_dry_run_estimates_the_tokens_without_calling(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    writer = EnrichingUpstream("writer")
    cache = EnrichmentCache(tmp_path, "writer/w-1")
    planned = plan(await _entries(tmp_path, 50), cache, 10)
    assert dry_run(planned, 10, budget=1000) == 0
    printed = capsys.readouterr().out
    assert f"would ask about 50 tools in 5 calls of up to 10, about {planned.tokens:,}" in printed
    assert "--max-tokens 1,000 would stop it before the end" in printed
    assert "call 1: ops__task_00, ops__task_01" in printed and "ops__task_49" in printed
    assert planned.tokens > 50 * 110, "the prompts are counted, the answers estimated"
    assert writer.calls == [] and not list(tmp_path.glob("*.jsonl"))


async def test_what_is_sent_is_the_tools_names_descriptions_and_parameter_names_redacted(tmp_path: Path) -> None:
    from fastmcp import FastMCP

    server = FastMCP("ops")

    @server.tool
    def rotate(node: str, token_ttl: int = 60) -> str:
        """Rotate the node's key (the admin key is sk-writer-secret, never share it)."""
        return "ok"

    writer = EnrichingUpstream("writer")
    gateway = Gateway(config(tmp_path), {"ops": server}, {"writer": writer, "up": ScriptedProvider("up")})
    await gateway.start()
    try:
        assert gateway.enricher is not None
        await gateway.enricher.settled()
    finally:
        await gateway.stop()
    sent = writer.requests[0].messages[-1].text()
    assert '"name": "ops__rotate"' in sent and '"parameters": ["node", "token_ttl"]' in sent
    assert "sk-writer-secret" not in sent and "[redacted]" in sent
    assert writer.requests[0].model == "w-1" and writer.requests[0].tools == []


def test_the_cache_is_keyed_by_the_model_the_alias_routes_to(tmp_path: Path) -> None:
    cfg = config(tmp_path)
    assert model_key(cfg, "writer") == "writer/w-1" and model_key(cfg, "fast") == "up/chat-model"
    writer = EnrichingUpstream("writer")
    cache = EnrichmentCache(tmp_path, model_key(cfg, "writer"))
    other = EnrichmentCache(tmp_path, model_key(cfg, "fast"))
    assert cache.path != other.path, "another model's enrichments are its own"
    assert writer.calls == []
