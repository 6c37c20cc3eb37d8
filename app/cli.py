"""`toolsift` command line."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys

from app.config import Config, ConfigError, load_config

DEFAULT_CONFIG = "config.json"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="toolsift", description="Tool-discovery gateway for OpenAI-compatible clients."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    serve = commands.add_parser("serve", help="run the gateway", description="Run the gateway over HTTP.")
    _add_config_option(serve)
    serve.add_argument("--host", default="127.0.0.1", help="interface to listen on (default: 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000, help="port to listen on (default: 8000)")
    serve.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    search = commands.add_parser(
        "search",
        help="rank tools for a query, as search_tools would",
        description="Run the search the model would run and print the ranked tools with their scores.",
    )
    _add_config_option(search)
    search.add_argument("query", help="keywords, a tool name, 'select:a,b' or '+required' words")
    search.add_argument("--server", help="only this server's tools")
    search.add_argument("-k", type=int, default=None, help="how many results (default: max_search_results)")
    search.add_argument("--tool-set", help="search within this tool set")
    args = parser.parse_args(argv)
    config = _load_or_exit(args.config)
    if args.command == "serve":
        return _serve(config, args)
    if args.command == "search":
        return asyncio.run(_search(config, args))
    return 2  # pragma: no cover - argparse rejects unknown commands


def _add_config_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config",
        default=os.environ.get("TOOLSIFT_CONFIG", DEFAULT_CONFIG),
        help="config file (default: $TOOLSIFT_CONFIG or ./config.json)",
    )


def _load_or_exit(path: str) -> Config:
    try:
        return load_config(path)
    except ConfigError as exc:
        print(f"toolsift: invalid config {path}:", file=sys.stderr)
        for problem in exc.problems:
            print(f"  {problem}", file=sys.stderr)
        raise SystemExit(2) from None


def _serve(config: Config, args: argparse.Namespace) -> int:
    import uvicorn

    from app.gateway import Gateway
    from app.http import create_app

    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s %(message)s")
    for path, variable in sorted(config.unset_env.items()):
        logging.getLogger("toolsift").warning("config %s: environment variable %s is not set", path, variable)
    app = create_app(Gateway(config))
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level, access_log=False)
    return 0


async def _search(config: Config, args: argparse.Namespace) -> int:
    """Search every configured tool as if deferred, with the gateway's own index and ranking."""
    from app.catalog import select_mcp_tools
    from app.discovery.search import Discovery, scored_tools
    from app.mcp.connections import McpManager
    from app.protocol import GatewayError
    from app.request_tools import mcp_groups

    logging.basicConfig(level="WARNING", format="%(levelname)s %(name)s %(message)s")
    manager = McpManager(config)
    await manager.start()
    try:
        for name, health in manager.health().items():
            if health["state"] == "down":
                print(f"warning: server {name} is down: {health['error']}", file=sys.stderr)
        try:
            entries = select_mcp_tools(manager.catalog, config, args.tool_set)
        except GatewayError as exc:
            print(f"toolsift: {exc.message}", file=sys.stderr)
            return 2
        if not entries:
            print("no tools to search", file=sys.stderr)
            return 1
        discovery = Discovery.build(mcp_groups(manager.catalog, entries), config.tool_discovery.manifest_max_tokens)
        if args.server is not None and args.server not in discovery.by_group:
            print(
                f"toolsift: unknown server {args.server!r}; servers: {', '.join(discovery.by_group)}", file=sys.stderr
            )
            return 2
        limit = args.k or config.tool_discovery.max_search_results
        results = scored_tools(discovery, args.query, args.server, limit)
        if not results:
            print(f"No tools found matching {args.query!r}.")
            return 1
        width = max(len(entry.name) for entry, _ in results)
        print(f"{'#':>2}  {'score':>6}  {'tool':<{width}}  description")
        for position, (entry, score) in enumerate(results, 1):
            description = entry.description.split("\n")[0]
            description = description if len(description) <= 70 else description[:67] + "..."
            print(f"{position:>2}  {score:>6.2f}  {entry.name:<{width}}  {description}")
        return 0
    finally:
        await manager.stop()


if __name__ == "__main__":
    sys.exit(main())
