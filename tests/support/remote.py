"""An example MCP server run over HTTP (streamable HTTP or SSE) in its own process, for the remote transports."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from tests.support import free_port

RUN_OVER_HTTP = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("remote", sys.argv[1])
module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)
module.mcp.run(transport=sys.argv[2], host="127.0.0.1", port=int(sys.argv[3]), show_banner=False, log_level="WARNING")
"""


def serve_over_http(script: Path, transport: str, env: dict[str, str] | None = None) -> Iterator[str]:
    """Yield the URL of `script`'s server (its module-level `mcp`) over `transport` ("http" or "sse")."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-c", RUN_OVER_HTTP, str(script), transport, str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    path = "/mcp" if transport == "http" else "/sse"
    deadline = time.monotonic() + 30
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                break
        except OSError:
            if time.monotonic() > deadline or process.poll() is not None:
                process.kill()
                raise RuntimeError(f"{transport} server did not start") from None
            time.sleep(0.1)
    try:
        yield f"http://127.0.0.1:{port}{path}"
    finally:
        process.terminate()
        process.wait(10)
