"""`toolsift` command line: the argument parser and the entry point, in one readable place.

Each command group's work is its own module, imported only when its command runs (so `toolsift tools` answered
by a running gateway imports neither the gateway nor its libraries): serve.py (`serve`, `demo`), inspect.py
(`check`, `tools`, `manifest`, `search`), models.py (`models`), enrich.py (`enrich`), mcp.py (`mcp --stdio`);
remote.py asks a running gateway and render.py prints the reports.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.cli import remote

if TYPE_CHECKING:  # imported where used: `tools`, `manifest` and `search` answered by a gateway need neither
    from app.config import Config

DEFAULT_CONFIG = "config.json"
CONFIG_VARIABLE = "TOOLSIFT_CONFIG"
LOCAL_REPORTS = ("check", "tools", "manifest", "search", "models", "enrich")


def handler(command: str) -> Callable[..., Any]:
    """A command's handler, called with the config and the parsed arguments: its module is imported only when it
    runs (the gateway's libraries take a second), by a plain import the layers test can read."""
    if command in ("serve", "demo"):
        from app.cli import serve

        return serve.serve if command == "serve" else serve.demo
    if command in ("check", "tools", "manifest", "search"):
        from app.cli import inspect

        found: Callable[..., Any] = getattr(inspect, command)
        return found
    if command == "models":
        from app.cli.models import models

        return models
    if command == "enrich":
        from app.cli.enrich import enrich

        return enrich
    from app.cli.mcp import mcp

    return mcp


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    args.config_source = config_source(args)
    if args.command in remote.REMOTE_COMMANDS:  # a running gateway answers in milliseconds
        answered = remote.run(args)
        if answered is not None:
            return answered
    if args.config_source.startswith("the default") and not Path(args.config).exists():
        print(
            f"toolsift: no config file here: looked for {Path(args.config).resolve()} ({args.config_source}). "
            f"Run from the folder that holds it, or name it: --config PATH (or set ${CONFIG_VARIABLE}).",
            file=sys.stderr,
        )
        return 2
    config = load_or_exit(args.config)
    if args.command in LOCAL_REPORTS:  # the config these answers come from, never silently ./config.json
        print(f"config: {Path(args.config).resolve()} ({args.config_source})", file=sys.stderr)
    result = handler(args.command)(config, args)
    if not isinstance(result, int):  # a coroutine: the command runs on an event loop
        import asyncio

        result = asyncio.run(result)
    return int(result)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="toolsift", description="Tool-discovery gateway for OpenAI-compatible clients."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    serve = _command(commands, "serve", "run the gateway over HTTP")
    _add_listen_options(serve)
    serve.add_argument(
        "--workers",
        type=int,
        default=1,
        help="worker processes on one port, each with its own MCP connections; more than 1 needs store.redis_url",
    )
    demo = _command(commands, "demo", "run the gateway with a local scripted stand-in for an LLM (no API key)")
    _add_listen_options(demo)
    _command(commands, "check", "validate the config and connect to every MCP server")
    listing = _command(commands, "tools", "list tools with their exposed names and status")
    listing.add_argument("--server", help="only this server's tools")
    listing.add_argument("--tool-set", help="only tools of this tool set")
    remote.add_options(listing)
    manifest = _command(commands, "manifest", "print the search_tools definition the model gets, with its tokens")
    manifest.add_argument("--tool-set", help="as for requests with this tool set")
    remote.add_options(manifest)
    search = _command(commands, "search", "rank tools for a query, as search_tools would")
    search.add_argument(
        "queries",
        nargs="+",
        metavar="QUERY",
        help="keywords, a tool name, 'select:a,b' or '+required' words; several: one search_tools call of several",
    )
    search.add_argument("--server", help="only this server's tools")
    search.add_argument("-k", type=int, default=None, help="how many results (default: max_search_results)")
    search.add_argument("--tool-set", help="search within this tool set")
    search.add_argument(
        "--explain", action="store_true", help="show the keyword, semantic and fused scores and the words matched"
    )
    remote.add_options(search)
    models = _command(commands, "models", "list the routed models, or pull an embedding model for search")
    models.add_argument("action", nargs="?", choices=["list", "pull"], default="list")
    models.add_argument("model", nargs="?", help="with pull: a hub model id (default: tool_discovery.semantic.model)")
    models.add_argument("--endpoint", help="with pull: the hub or a mirror (default: $HF_ENDPOINT or huggingface.co)")
    enrich = _command(commands, "enrich", "have a model write each deferred tool's purpose and search phrasings")
    enrich.add_argument("--model", help="the model alias that writes them (default: tool_discovery.enrich.model)")
    enrich.add_argument("--dry-run", action="store_true", help="list the tools and estimate the tokens; call nothing")
    enrich.add_argument("--max-tokens", type=_positive, help="stop before passing this many tokens (prompts + answers)")
    enrich.add_argument("--batch-size", type=_positive, help="tools per upstream call (default: 15, or the config's)")
    front = _command(commands, "mcp", "serve every configured MCP server as one MCP server, over stdio")
    front.add_argument("--stdio", action="store_true", required=True, help="speak MCP on stdin/stdout")
    front.add_argument("--mode", choices=["lazy", "proxy", "full"], help="exposure mode (default: mcp_front.mode)")
    front.add_argument("--tool-set", help="only this tool set's tools")
    return parser


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} is not a positive number")
    return value


def _add_listen_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="interface to listen on (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port to listen on (default: 8000)")
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    parser.add_argument("--log-format", default="text", choices=["text", "json"], help="log lines as text or JSON")


def _command(commands: Any, name: str, summary: str) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = commands.add_parser(
        name, help=summary, description=summary[0].upper() + summary[1:] + "."
    )
    parser.add_argument("--config", help=f"config file (default: ${CONFIG_VARIABLE} or ./{DEFAULT_CONFIG})")
    return parser


def config_source(args: argparse.Namespace) -> str:
    """Fill in `args.config` when it was not given; say where it came from, for the lines that name it."""
    if args.config:
        return "--config"
    if os.environ.get(CONFIG_VARIABLE):
        args.config = os.environ[CONFIG_VARIABLE]
        return f"${CONFIG_VARIABLE}"
    args.config = DEFAULT_CONFIG
    return f"the default, ./{DEFAULT_CONFIG} here; --config or ${CONFIG_VARIABLE} to choose"


def load_or_exit(path: str) -> Config:
    """The config at `path`, or every problem with it on stderr and exit status 2."""
    from app.config import ConfigError, load_config

    try:
        return load_config(path)
    except ConfigError as exc:
        print(f"toolsift: invalid config {path}:", file=sys.stderr)
        for problem in exc.problems:
            print(f"  {problem}", file=sys.stderr)
        for warning in exc.warnings:
            print(f"warning: {warning}", file=sys.stderr)
        raise SystemExit(2) from None
