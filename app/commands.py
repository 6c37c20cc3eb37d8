"""The inspection subcommands: check, tools, manifest, search, models (and models pull).

Each starts the configured MCP servers (showing progress), answers from the same code the gateway runs, and
stops them again; `tools`, `manifest` and `search` ask a running gateway's admin API first (app/remote.py).
Output is plain text tables (app/render.py), so it reads well in a terminal and greps well in CI.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from contextlib import asynccontextmanager
from typing import Any

import httpx

from app import render, tokens
from app.config import Config
from app.core.catalog import select_mcp_tools
from app.discovery import models as model_store
from app.discovery.cache import DiscoveryCache
from app.discovery.semantic import SemanticSearch
from app.errors import RequestRefused
from app.inspection import (
    check_server,
    every_discovery,
    manifest_report,
    model_discovery,
    search_report,
    tool_rows,
)
from app.logs import guard_secrets
from app.mcp.client.connections import McpManager, ServerState
from app.render import table


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


async def check(config: Config, _: argparse.Namespace) -> int:
    async with connected(config) as manager:
        health = manager.health()
        deferral = manager.catalog.deferral
    rows = [
        (name, h["transport"], h["state"], h["tools"], "deferred" if h["deferred"] else "loaded", h["error"] or "")
        for name, h in health.items()
    ]
    print("config: ok")
    for line in render.table(rows, ["server", "transport", "state", "tools", "status", "error"]):
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
    try:
        check_server(config, args.server)  # before starting every server
    except RequestRefused as exc:
        print(f"toolsift: {exc.message}", file=sys.stderr)
        return 2
    async with connected(config) as manager:
        try:
            rows = tool_rows(manager.catalog, config, args.tool_set, args.server)
        except RequestRefused as exc:
            print(f"toolsift: {exc.message}", file=sys.stderr)
            return 2
    return render.tools(rows)


async def manifest(config: Config, args: argparse.Namespace) -> int:
    async with connected(config) as manager:
        try:
            discovery = model_discovery(manager.catalog, config, args.tool_set, DiscoveryCache(_max_tokens(config)))
        except RequestRefused as exc:
            print(f"toolsift: {exc.message}", file=sys.stderr)
            return 2
    return render.manifest(manifest_report(discovery))


async def search(config: Config, args: argparse.Namespace) -> int:
    """The model's own search over the deferred tools, as the gateway would run it (with the gateway's model
    search when it is running: see app/remote.py)."""
    semantic = SemanticSearch(config.tool_discovery.semantic, config.base_dir)
    async with connected(config) as manager:
        try:
            entries = select_mcp_tools(manager.catalog, config, args.tool_set)
            await asyncio.to_thread(semantic.ensure_now, entries)
            discovery = model_discovery(
                manager.catalog, config, args.tool_set, DiscoveryCache(_max_tokens(config), semantic)
            )
            every = every_discovery(
                manager.catalog, config, args.tool_set, DiscoveryCache(semantic=semantic, everything=True)
            )
        except RequestRefused as exc:
            print(f"toolsift: {exc.message}", file=sys.stderr)
            return 2
    if discovery is None:
        print("no deferred tools: the model gets every tool as is, without search_tools", file=sys.stderr)
    semantic.prepare_now(args.query)
    limit = args.k or config.tool_discovery.max_search_results
    try:
        report = search_report(discovery, args.query, args.server, limit, every)
    except RequestRefused as exc:
        print(f"toolsift: {exc.message}", file=sys.stderr)
        return 2
    return render.search(report, args.query, args.explain)


def _max_tokens(config: Config) -> int:
    return config.tool_discovery.manifest_max_tokens


def models(config: Config, args: argparse.Namespace) -> int:
    if args.action == "pull":
        return _pull(args.model or config.tool_discovery.semantic.model, args.endpoint)
    rows = [
        (alias, model.provider, config.providers[model.provider].type, model.model, ", ".join(model.fallbacks) or "-")
        for alias, model in config.models.items()
    ]
    for line in render.table(rows, ["model", "provider", "type", "upstream model", "fallbacks"]):
        print(line)
    if config.default_provider:
        print(f"\nany other model name goes to provider '{config.default_provider}' unchanged")
    return 0


async def mcp(config: Config, args: argparse.Namespace) -> int:
    """The MCP front over stdio: stdout carries the protocol, so everything else goes to stderr."""
    from app.engine.gateway import Gateway
    from app.fronts.mcp.server import McpFront

    logging.basicConfig(level="WARNING", format="%(levelname)s %(name)s %(message)s", stream=sys.stderr)
    gateway = Gateway(config)
    await gateway.start()  # as serve does: keyword search at once, hybrid once the tools are embedded
    try:
        front = McpFront(gateway, args.mode or config.mcp_front.mode, args.tool_set)
        try:
            front.served()
        except RequestRefused as exc:
            print(f"toolsift: {exc.message}", file=sys.stderr)
            return 2
        await front.server.run_stdio_async(show_banner=False, log_level="WARNING")
        return 0
    finally:
        await gateway.stop()


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
