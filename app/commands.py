"""The inspection subcommands: check, tools, manifest, search, models (and models pull).

Each starts the configured MCP servers (showing progress), answers from the same code the gateway runs, and
stops them again. Output is plain text tables, so it reads well in a terminal and greps well in CI.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Iterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import httpx

from app import tokens
from app.config import Config
from app.discovery import models as model_store
from app.discovery.search import Discovery, scored_tools
from app.discovery.semantic import SemanticSearch
from app.engine.catalog import Catalog, ToolEntry, select_mcp_tools
from app.engine.model import ChatRequest, Options
from app.engine.request_tools import DiscoveryCache, mcp_groups, prepare_request_tools
from app.errors import RequestRefused
from app.mcp.client.connections import McpManager, ServerState
from app.server.observability import guard_secrets


@asynccontextmanager
async def connected(config: Config) -> Any:
    """All configured servers connected, with one progress line per server (a live counter on a terminal)."""
    logging.basicConfig(level="WARNING", format="%(levelname)s %(name)s %(message)s")
    guard_secrets(config.secrets())
    manager = McpManager(config)
    total, done = len(manager.connections), 0
    live = sys.stderr.isatty()

    def report(name: str, state: str) -> None:
        nonlocal done
        done += 1
        if live:
            end = "\n" if done == total else ""
            print(f"\rconnecting MCP servers: {done}/{total} ({name}: {state})\033[K", end=end, file=sys.stderr)
        else:
            print(f"connected {done}/{total}: {name} {state}", file=sys.stderr)

    manager.on_started = report
    if total and not live:
        print(f"connecting {total} MCP servers...", file=sys.stderr)
    await manager.start()
    try:
        yield manager
    finally:
        await manager.stop()


def table(rows: Sequence[Sequence[Any]], header: Sequence[str]) -> Iterator[str]:
    cells = [[str(value) for value in row] for row in rows]
    widths = [max([len(title), *(len(row[i]) for row in cells)]) for i, title in enumerate(header)]
    yield "  ".join(title.ljust(width) for title, width in zip(header, widths, strict=True)).rstrip()
    for row in cells:
        yield "  ".join(value.ljust(width) for value, width in zip(row, widths, strict=True)).rstrip()


def _short(text: str, limit: int = 70) -> str:
    line = text.strip().split("\n")[0]
    return line if len(line) <= limit else line[: limit - 3] + "..."


async def check(config: Config, _: argparse.Namespace) -> int:
    async with connected(config) as manager:
        health = manager.health()
        deferral = manager.catalog.deferral
    rows = [
        (name, h["transport"], h["state"], h["tools"], "deferred" if h["deferred"] else "loaded", h["error"] or "")
        for name, h in health.items()
    ]
    print("config: ok")
    for line in table(rows, ["server", "transport", "state", "tools", "status", "error"]):
        print(line)
    if deferral.servers:
        kind = "o200k_base tokens" if tokens.exact() else "estimated tokens"
        threshold = f"auto_defer_min_tokens: {deferral.threshold:,} {kind}"
        print(f"\ndeferral (tool_discovery.defer: {deferral.mode}, {threshold}):")
        why = [(name, "deferred" if d.deferred else "loaded", d.reason) for name, d in deferral.servers.items()]
        for line in table(why, ["server", "status", "why"]):
            print(f"  {line}")
    unready = config.provider_problems()
    if unready:
        print(f"warning: {unready}; chat requests will fail until one can serve", file=sys.stderr)
    down = [name for name, h in health.items() if h["state"] == ServerState.DOWN.value]
    if down:
        print(f"{len(down)} server(s) down: {', '.join(down)}", file=sys.stderr)
        return 1
    return 0


async def tools(config: Config, args: argparse.Namespace) -> int:
    if args.server is not None and args.server not in config.mcp_servers:  # before starting every server
        print(f"toolsift: unknown server {args.server!r}; servers: {', '.join(config.mcp_servers)}", file=sys.stderr)
        return 2
    _, entries = await _tool_set_entries(config, args.tool_set)
    if entries is None:
        return 2
    if args.server:
        entries = [entry for entry in entries if entry.server == args.server]
    rows = [(e.name, e.server, "deferred" if e.deferred else "loaded", _short(e.description, 60)) for e in entries]
    for line in table(rows, ["tool", "server", "status", "description"]):
        print(line)
    return 0


async def manifest(config: Config, args: argparse.Namespace) -> int:
    async with connected(config) as manager:
        request = ChatRequest("-", [], [], Options(), tool_set=args.tool_set)
        try:
            request_tools = prepare_request_tools(
                manager.catalog, config, request, DiscoveryCache(config.tool_discovery.manifest_max_tokens)
            )
        except RequestRefused as exc:
            print(f"toolsift: {exc.message}", file=sys.stderr)
            return 2
    if request_tools.discovery is None:
        print("Nothing is deferred: every tool is sent as is, without search_tools.")
        return 0
    definition = request_tools.discovery.definition
    print(definition["function"]["description"])
    kind = "o200k_base tokens" if tokens.exact() else "estimated tokens"
    print(f"\nsearch_tools definition: {tokens.count_tools([definition]):,} {kind}", file=sys.stderr)
    return 0


async def search(config: Config, args: argparse.Namespace) -> int:
    catalog, entries = await _tool_set_entries(config, args.tool_set)
    if entries is None:
        return 2
    if not entries:
        print("no tools to search", file=sys.stderr)
        return 1
    semantic = SemanticSearch(config.tool_discovery.semantic, config.base_dir)
    await asyncio.to_thread(semantic.ensure_now, entries)
    discovery = Discovery.build(
        mcp_groups(catalog, entries), config.tool_discovery.manifest_max_tokens, semantic=semantic
    )
    if args.server is not None and args.server not in discovery.by_group:
        print(f"toolsift: unknown server {args.server!r}; servers: {', '.join(discovery.by_group)}", file=sys.stderr)
        return 2
    semantic.prepare_now(args.query)
    kind = "hybrid (keywords + meaning)" if semantic.state == "ready" else f"keywords only ({semantic.reason or 'off'})"
    print(f"search: {kind}", file=sys.stderr)
    best = discovery.index.best_possible(args.query)
    results = scored_tools(discovery, args.query, args.server, args.k or config.tool_discovery.max_search_results)
    if not results:
        print(f"No tools found matching {args.query!r}.")
        return 1
    if results[0].weak:
        print("No tool matches these words; the closest by meaning (weak matches):")
    columns = ["#", "score", "keywords", "meaning", "match", "tool", "description"]
    rows: list[tuple[Any, ...]] = [
        (
            position,
            f"{found.score:.2f}",
            f"{found.lexical:.2f}",
            f"{found.semantic:.2f}" if found.semantic is not None else "-",
            f"{min(found.lexical / best, 1):.0%}" if best else "-",
            found.entry.name,
            _short(found.entry.description),
        )
        for position, found in enumerate(results, 1)
    ]
    if not args.explain:
        columns, rows = [columns[0], columns[1], *columns[4:]], [(row[0], row[1], *row[4:]) for row in rows]
    for line in table(rows, columns):
        print(line)
    return 0


def models(config: Config, args: argparse.Namespace) -> int:
    if args.action == "pull":
        return _pull(args.model or config.tool_discovery.semantic.model, args.endpoint)
    rows = [
        (alias, model.provider, config.providers[model.provider].type, model.model, ", ".join(model.fallbacks) or "-")
        for alias, model in config.models.items()
    ]
    for line in table(rows, ["model", "provider", "type", "upstream model", "fallbacks"]):
        print(line)
    if config.default_provider:
        print(f"\nany other model name goes to provider '{config.default_provider}' unchanged")
    return 0


async def mcp(config: Config, args: argparse.Namespace) -> int:
    """The MCP front over stdio: stdout carries the protocol, so everything else goes to stderr."""
    from app.engine.tasks import TaskRunner
    from app.mcp.front.server import Front
    from app.providers import Router

    logging.basicConfig(level="WARNING", format="%(levelname)s %(name)s %(message)s", stream=sys.stderr)
    guard_secrets(config.secrets())
    manager = McpManager(config)
    semantic = SemanticSearch(config.tool_discovery.semantic, config.base_dir)
    await semantic.start()  # as in the gateway: keyword search at once, hybrid once the tools are embedded
    await manager.start()
    router = Router(config)
    try:
        mode = args.mode or config.mcp_front.mode
        front = Front()
        front.semantic = semantic
        run_task = config.mcp_front.run_task
        if run_task is not None:
            cache = DiscoveryCache(config.tool_discovery.manifest_max_tokens, semantic)
            front.tasks = TaskRunner(config, run_task, router, manager, cache)
        try:
            front.populate(manager, config, mode, args.tool_set)
        except RequestRefused as exc:
            print(f"toolsift: {exc.message}", file=sys.stderr)
            return 2
        front.keep_in_sync(manager, config, mode, args.tool_set)
        await front.server.run_stdio_async(show_banner=False, log_level="WARNING")
        return 0
    finally:
        await semantic.aclose()
        await manager.stop()
        await router.aclose()


async def _tool_set_entries(config: Config, tool_set: str | None) -> tuple[Catalog, list[ToolEntry] | None]:
    """The servers' catalog and the tools of `tool_set` (None, with the reason printed, if it is unknown)."""
    async with connected(config) as manager:
        try:
            return manager.catalog, select_mcp_tools(manager.catalog, config, tool_set)
        except RequestRefused as exc:
            print(f"toolsift: {exc.message}", file=sys.stderr)
            return manager.catalog, None


def _pull(model_id: str, endpoint: str | None) -> int:
    """Fetch an embedding model once, where the network allows; the gateway then finds it offline."""
    found = model_store.find_model(model_id)
    if found is not None:
        print(f"{model_id}: already here ({found})")
        return 0
    try:
        path = model_store.pull(model_id, endpoint)
    except (OSError, ValueError, httpx.HTTPError) as exc:
        print(f"toolsift: cannot pull {model_id}: {exc}", file=sys.stderr)
        return 1
    print(f"{model_id}: pulled to {path}")
    return 0
