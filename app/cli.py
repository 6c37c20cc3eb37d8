"""`toolsift` command line."""

from __future__ import annotations

import argparse
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
    args = parser.parse_args(argv)
    config = _load_or_exit(args.config)
    if args.command == "serve":
        return _serve(config, args)
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


if __name__ == "__main__":
    sys.exit(main())
