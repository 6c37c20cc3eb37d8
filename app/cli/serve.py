"""`toolsift serve` and `toolsift demo`: the gateway over HTTP (uvicorn), one process or several workers."""

from __future__ import annotations

import argparse
import errno
import json
import logging
import os
import shutil
import socket
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import uvicorn

from app.cli import load_or_exit, running
from app.config import Config, config_warnings
from app.engine.api import Engine
from app.engine.build import build_gateway
from app.server.app import create_app
from app.server.client_timeouts import TimedHttpProtocol
from app.server.observability import configure_logging

LOOPBACK = ("127.0.0.1", "localhost", "::1")


WORKERS_NEED_REDIS = (
    "toolsift serve --workers {workers}: several worker processes need store.redis_url, so that they share "
    "every caller's state (sessions, stored responses, MCP clients' enabled tools); without it each worker would "
    "keep its own, and a caller's next request, landing on another worker, would not find them. Set "
    'store.redis_url (e.g. "redis://127.0.0.1:6379/0") or serve with --workers 1.'
)


def serve(config: Config, args: argparse.Namespace) -> int:
    if args.workers < 1:
        print(f"error: --workers must be 1 or more, not {args.workers}", file=sys.stderr)
        return 2
    taken = port_taken(args.host, args.port)
    if taken is not None:  # before any server connects: with a dozen servers that takes half a minute
        print(f"error: {taken}", file=sys.stderr)
        return 2
    if args.workers > 1 and not config.store.redis_url:
        print(f"error: {WORKERS_NEED_REDIS.format(workers=args.workers)}", file=sys.stderr)
        return 2
    configure_logging(args.log_level, args.log_format)
    log = logging.getLogger("toolsift")
    log.info("config %s (%s)", Path(args.config).resolve(), getattr(args, "config_source", "--config"))
    for note in config.notes:
        log.info("config: %s", note)
    for warning in config_warnings(config):  # what `toolsift check` prints
        log.warning("config %s", warning)
    if not config.auth.gateway_keys() and args.host not in LOOPBACK:
        log.warning(
            "SECURITY: listening on %s without gateway keys: anyone who can reach this port can use your upstream "
            "keys and MCP servers. Set auth.api_keys in the config.",
            args.host,
        )
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
        # Each worker writes its counters to files here and `/metrics` sums them all, whichever worker answers
        # (prometheus_client's multiprocess mode; a worker reads the variable when it starts).
        counters = tempfile.mkdtemp(prefix="toolsift-metrics-")
        os.environ.update(
            TOOLSIFT_CONFIG=str(Path(args.config).resolve()),
            TOOLSIFT_LOG_LEVEL=args.log_level,
            TOOLSIFT_LOG_FORMAT=args.log_format,
            PROMETHEUS_MULTIPROC_DIR=counters,
        )
        noted = running.note(_url(args.host, args.port), args.config)
        try:
            uvicorn.run("app.cli.serve:worker_app", factory=True, workers=args.workers, **options)
        finally:
            running.forget(noted)
            os.environ.pop("PROMETHEUS_MULTIPROC_DIR", None)
            shutil.rmtree(counters, ignore_errors=True)
        return 0
    noted = running.note(_url(args.host, args.port), args.config)  # `toolsift search` finds it by its config
    announce_ready(_url(args.host, args.port))
    try:
        uvicorn.run(create_app(Engine(build_gateway(config, own_process=True))), log_config=None, **options)
    finally:
        running.forget(noted)
    return 0


def announce_ready(url: str) -> threading.Thread:
    """One line once the gateway is ready (its `/readyz`: started, search by meaning ready when it is on), so the
    first request a person sends after it is answered as every later one: before, it often ran while the tools were
    still being embedded, and searched by keywords alone. Asked over HTTP, as a load balancer does."""

    def wait() -> None:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            time.sleep(0.25)
            try:
                with urllib.request.urlopen(f"{url}/readyz", timeout=2) as answer:
                    body = json.loads(answer.read())
            except urllib.error.HTTPError as exc:
                body = json.loads(exc.read() or b"{}")
            except (OSError, ValueError):
                continue
            problems = [str(problem) for problem in body.get("problems", [])]
            if any(problem == "starting" or problem.startswith("search by meaning") for problem in problems):
                continue
            if problems:
                logging.getLogger("toolsift").warning("serving at %s, not ready: %s", url, "; ".join(problems))
            else:
                logging.getLogger("toolsift").info("ready: %s", url)
            return

    thread = threading.Thread(target=wait, name="toolsift-ready", daemon=True)
    thread.start()
    return thread


def _url(host: str, port: int) -> str:
    """Where a command on this machine reaches the gateway: loopback for a gateway on every interface."""
    shown = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    return f"http://[{shown}]:{port}" if ":" in shown else f"http://{shown}:{port}"


def port_taken(host: str, port: int) -> str | None:
    """Why the gateway cannot listen on `host`:`port` (already in use, or not an address here), or None. Asked by
    binding it once, as the server will (with the same address reuse), then letting it go."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        return f"cannot listen on {host}:{port}: {exc.strerror}"
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return (
                    f"port {port} on {host} is already in use (another toolsift, or another server): stop it, or "
                    f"choose another port with --port (make demo PORT={port + 1})"
                )
            return f"cannot listen on {host}:{port}: {exc.strerror}"
    return None


def demo(config: Config, args: argparse.Namespace) -> int:
    """The gateway on `config` with its providers replaced by the demo model, served beside it in this process."""
    from app.demo.launch import console_link, with_console_key, with_demo_model
    from app.demo.server import DemoModel

    taken = port_taken(args.host, args.port)
    if taken is not None:
        print(f"error: {taken}", file=sys.stderr)
        return 2
    config, console_key = with_console_key(config, args.host not in LOOPBACK)
    model = DemoModel(max_body_bytes=config.max_request_bytes).start()
    print(
        f"toolsift demo: every model name is answered by a scripted stand-in for an LLM at {model.base_url} "
        "(no API key; `make run` uses the real providers)",
        file=sys.stderr,
    )
    if console_key:
        print(
            f"toolsift demo: listening on {args.host}, so the console takes an admin key made for this run: open "
            f"{console_link(args.port, console_key)} (behind a published port, use the host's port)",
            file=sys.stderr,
        )
    try:
        return serve(with_demo_model(config, model.base_url), argparse.Namespace(**{**vars(args), "workers": 1}))
    finally:
        model.stop()


def worker_app() -> Any:
    """The app of one worker process (`serve --workers N`)."""
    configure_logging(os.environ.get("TOOLSIFT_LOG_LEVEL", "info"), os.environ.get("TOOLSIFT_LOG_FORMAT", "text"))
    config = load_or_exit(os.environ["TOOLSIFT_CONFIG"])
    TimedHttpProtocol.configure(config.client_header_timeout, config.client_body_timeout)  # before any connection
    return create_app(Engine(build_gateway(config, own_process=True)))
