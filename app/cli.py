"""`toolsift` command line."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app import remote

if TYPE_CHECKING:  # imported where used: `tools`, `manifest` and `search` answered by a gateway need neither
    from app.config import Config

DEFAULT_CONFIG = "config.json"


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command in remote.REMOTE_COMMANDS:  # a running gateway answers in milliseconds
        answered = remote.run(args)
        if answered is not None:
            return answered
    config = _load_or_exit(args.config)
    if args.command == "serve":
        return _serve(config, args)
    if args.command == "demo":
        return _demo(config, args)
    import asyncio

    from app import commands

    handler = getattr(commands, args.command)
    result = handler(config, args)
    return asyncio.run(result) if asyncio.iscoroutine(result) else int(result)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="toolsift", description="Tool-discovery gateway for OpenAI-compatible clients."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    serve = _command(commands, "serve", "run the gateway over HTTP")
    _add_listen_options(serve)
    serve.add_argument("--workers", type=int, default=1, help="worker processes, each with its own MCP connections")
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
    search.add_argument("query", help="keywords, a tool name, 'select:a,b' or '+required' words")
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
    front = _command(commands, "mcp", "serve every configured MCP server as one MCP server, over stdio")
    front.add_argument("--stdio", action="store_true", required=True, help="speak MCP on stdin/stdout")
    front.add_argument("--mode", choices=["lazy", "proxy", "full"], help="exposure mode (default: mcp_front.mode)")
    front.add_argument("--tool-set", help="only this tool set's tools")
    return parser


def _add_listen_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="interface to listen on (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port to listen on (default: 8000)")
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    parser.add_argument("--log-format", default="text", choices=["text", "json"], help="log lines as text or JSON")


def _command(commands: Any, name: str, summary: str) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = commands.add_parser(
        name, help=summary, description=summary[0].upper() + summary[1:] + "."
    )
    _add_config_option(parser)
    return parser


def _add_config_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config",
        default=os.environ.get("TOOLSIFT_CONFIG", DEFAULT_CONFIG),
        help="config file (default: $TOOLSIFT_CONFIG or ./config.json)",
    )


def _load_or_exit(path: str) -> Config:
    from app.config import ConfigError, load_config

    try:
        return load_config(path)
    except ConfigError as exc:
        print(f"toolsift: invalid config {path}:", file=sys.stderr)
        for problem in exc.problems:
            print(f"  {problem}", file=sys.stderr)
        raise SystemExit(2) from None


LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _serve(config: Config, args: argparse.Namespace) -> int:
    import logging

    import uvicorn

    from app.server.observability import configure_logging

    configure_logging(args.log_level, args.log_format)
    log = logging.getLogger("toolsift")
    for path, variable in sorted(config.unset_env.items()):
        log.warning("config %s: environment variable %s is not set", path, variable)
    if not config.auth.api_keys and args.host not in LOOPBACK:
        log.warning(
            "SECURITY: listening on %s without gateway keys: anyone who can reach this port can use your upstream "
            "keys and MCP servers. Set auth.api_keys in the config.",
            args.host,
        )
    from app.server.client_timeouts import TimedHttpProtocol

    TimedHttpProtocol.configure(config.client_header_timeout, config.client_body_timeout)
    options: dict[str, Any] = {
        "http": TimedHttpProtocol,  # uvicorn's httptools protocol, with header and body deadlines
        "host": args.host,
        "port": args.port,
        "log_level": args.log_level,
        "access_log": False,
        # On SIGTERM: stop accepting, let in-flight requests finish this long, then close MCP sessions.
        "timeout_graceful_shutdown": config.shutdown_grace_seconds,
        # Longer than load balancers' idle timeouts (60 s is common), so the server never closes a connection a
        # client or proxy is about to reuse: that race shows up as resets under load.
        "timeout_keep_alive": config.keep_alive_seconds,
    }
    if args.workers > 1:
        # Each worker process builds its own gateway (and MCP connections) from the same config file.
        os.environ.update(
            TOOLSIFT_CONFIG=str(Path(args.config).resolve()),
            TOOLSIFT_LOG_LEVEL=args.log_level,
            TOOLSIFT_LOG_FORMAT=args.log_format,
        )
        uvicorn.run("app.cli:worker_app", factory=True, workers=args.workers, **options)
        return 0
    uvicorn.run(_app(config), log_config=None, **options)
    return 0


def _demo(config: Config, args: argparse.Namespace) -> int:
    """The gateway on `config` with its providers replaced by the demo model, served beside it in this process."""
    from app.demo.launch import with_demo_model
    from app.demo.server import DemoModel

    model = DemoModel().start()
    print(
        f"toolsift demo: every model name is answered by a scripted stand-in for an LLM at {model.base_url} "
        "(no API key; `make run` uses the real providers)",
        file=sys.stderr,
    )
    try:
        return _serve(with_demo_model(config, model.base_url), argparse.Namespace(**{**vars(args), "workers": 1}))
    finally:
        model.stop()


def worker_app() -> Any:
    """The app of one worker process (`serve --workers N`)."""
    from app.server.client_timeouts import TimedHttpProtocol
    from app.server.observability import configure_logging

    configure_logging(os.environ.get("TOOLSIFT_LOG_LEVEL", "info"), os.environ.get("TOOLSIFT_LOG_FORMAT", "text"))
    config = _load_or_exit(os.environ["TOOLSIFT_CONFIG"])
    TimedHttpProtocol.configure(config.client_header_timeout, config.client_body_timeout)  # before any connection
    return _app(config)


def _app(config: Config) -> Any:
    from app.engine.gateway import Gateway
    from app.server.app import create_app

    return create_app(Gateway(config))


if __name__ == "__main__":
    sys.exit(main())
