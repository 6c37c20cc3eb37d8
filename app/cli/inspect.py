"""The inspection commands: check, tools, manifest, search.

Each builds the gateway for inspection (app/engine/build.py: its MCP servers connected, with progress), answers
from the same code the gateway runs, and stops it again; `tools`, `manifest` and `search` ask a running gateway's
admin API first (remote.py). Output is plain text tables (render.py), so it reads well in a terminal and greps well
in CI.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from app.cli import render
from app.cli.render import table
from app.common import tokens
from app.common.errors import RequestRefused
from app.common.identity import ANONYMOUS
from app.config import Config, config_warnings
from app.core.catalog import select_mcp_tools
from app.discovery.cache import DiscoveryCache
from app.engine.build import build_gateway, running
from app.engine.discovery_views import every_discovery, model_discovery
from app.engine.explained_search import explained_search
from app.engine.gateway import Gateway
from app.fronts.inspection import check_server, manifest_report, tool_rows
from app.mcp.client.state import ServerState
from app.store import Stores
from app.store.eviction import eviction_problem


@asynccontextmanager
async def connected(config: Config) -> AsyncIterator[Gateway]:
    """The gateway with all configured servers connected, with one progress line per server (a live counter on a
    terminal)."""
    logging.basicConfig(level="WARNING", format="%(levelname)s %(name)s %(message)s")
    gateway = build_gateway(config)
    manager = gateway.mcp
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
        print(f"connecting {total} MCP server{'' if total == 1 else 's'}...", file=sys.stderr)
    async with running(gateway, "inspect"):
        yield gateway


async def check(config: Config, _: argparse.Namespace) -> int:
    """The config's problems (it loaded, so only warnings are left), then every server started, as `serve` would:
    each one's state, and for one that is down the cause and the last lines it wrote on stderr."""
    for note in config.notes:
        print(f"note: {note}", file=sys.stderr)
    for warning in config_warnings(config):
        print(f"warning: {warning}", file=sys.stderr)
    counters = config.limits_redis_url()
    evicting = await _eviction(counters) if counters else None
    if evicting is not None:
        print(f"warning: {evicting}", file=sys.stderr)
    print(scaling_line(config), file=sys.stderr)
    async with connected(config) as gateway:
        manager = gateway.mcp
        health = manager.health()
        deferral = manager.catalog.deferral
    rows = [(name, h["transport"], h["state"], h["tools"], _status(h), h["error"] or "") for name, h in health.items()]
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
    for name, h in health.items():
        if h.get("stderr"):
            print(f"\n{name} is down; the last lines it wrote on stderr:")
            for line in h["stderr"]:
                print(f"  | {line}")
    unready = config.provider_problems()
    if unready:
        print(f"warning: {unready}; chat requests will fail until one can serve", file=sys.stderr)
    down = [name for name, h in health.items() if h["state"] == ServerState.DOWN.value]
    if down:
        print(f"{len(down)} server(s) down: {', '.join(down)}", file=sys.stderr)
        return 1
    return 0


def scaling_line(config: Config) -> str:
    """Where per-caller state lives, and so whether `serve --workers N` and replicas can serve this config."""
    if config.store.redis_url:
        return "state: shared in Redis (store.redis_url): `serve --workers N` and replicas share callers' state"
    return (
        "state: in this process's memory: `serve --workers N` (N > 1) and replicas behind a load balancer need "
        "store.redis_url"
    )


async def tools(config: Config, args: argparse.Namespace) -> int:
    try:
        check_server(config, args.server)  # before starting every server
    except RequestRefused as exc:
        print(f"toolsift: {exc.message}", file=sys.stderr)
        return 2
    async with connected(config) as gateway:
        try:
            rows = tool_rows(gateway.mcp.catalog, config, args.tool_set, args.server)
        except RequestRefused as exc:
            print(f"toolsift: {exc.message}", file=sys.stderr)
            return 2
    return render.tools(rows)


async def manifest(config: Config, args: argparse.Namespace) -> int:
    async with connected(config) as gateway:
        try:
            cache = DiscoveryCache(config.tool_discovery.manifest_max_tokens)  # the manifest alone: no search model
            discovery = model_discovery(gateway.mcp.catalog, config, args.tool_set, cache)
        except RequestRefused as exc:
            print(f"toolsift: {exc.message}", file=sys.stderr)
            return 2
    return render.manifest(manifest_report(discovery))


async def search(config: Config, args: argparse.Namespace) -> int:
    """The model's own search over the deferred tools, as the gateway would run it (with the gateway's model
    search when it is running: see remote.py)."""
    async with connected(config) as gateway:
        manager, semantic = gateway.mcp, gateway.semantic
        try:
            entries = select_mcp_tools(manager.catalog, config, args.tool_set)
            enriched = [gateway.enrichments.find(entry) for entry in entries] if gateway.enrichments else []
            texts = [found.text for found in enriched if found is not None]  # their vectors too
            await asyncio.to_thread(semantic.ensure_now, entries, texts)
            discovery = model_discovery(manager.catalog, config, args.tool_set, gateway.discovery)
            every = every_discovery(
                manager.catalog, config, args.tool_set, DiscoveryCache(semantic=semantic, everything=True)
            )
            learned = await gateway.learning.view(ANONYMOUS.id)  # what the store's learned pairs lift
        except RequestRefused as exc:
            print(f"toolsift: {exc.message}", file=sys.stderr)
            return 2
    if discovery is None:
        print("no deferred tools: the model gets every tool as is, without search_tools", file=sys.stderr)
    limit = args.k or config.tool_discovery.max_search_results
    try:
        report = await explained_search(
            discovery, every, args.queries, args.server, limit, config.max_queries_per_search, learned
        )
    except RequestRefused as exc:
        print(f"toolsift: {exc.message}", file=sys.stderr)
        return 2
    return render.search(report, args.queries, args.explain)


async def _eviction(url: str) -> str | None:
    """The counters' Redis asked for its eviction policy, on a client closed again at once."""
    stores = Stores(timeout=2.0)
    try:
        return await eviction_problem(stores.client(url))
    finally:
        await stores.aclose()


def _status(health: dict[str, Any]) -> str:
    """How a server's tools reach the model: loaded or deferred when it is up; a server that is not serves none."""
    if health["state"] == "up":
        return "deferred" if health["deferred"] else "loaded"
    return "disabled" if health["state"] == "disabled" else "down"
