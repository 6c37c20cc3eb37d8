"""What the benches share: free ports, starting `toolsift serve` on a config, waiting for it, percentiles."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

import httpx

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_until_up(url: str, process: subprocess.Popen[bytes], seconds: float = 90) -> None:
    """Until `url` answers; a gateway's /healthz until its tools are embedded too, so that no bench measures
    the background embedding that follows a start."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"process for {url} exited early")
        try:
            response = httpx.get(url, timeout=1)
            settled = not url.endswith("/healthz") or response.json().get("search", {}).get("mode") != "embedding"
            if settled:
                return
        except (httpx.HTTPError, ValueError):
            pass
        time.sleep(0.1)
    raise SystemExit(f"{url} did not come up")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def demo_config(**changes: Any) -> dict[str, Any]:
    """The bundled config with absolute server paths, so it runs from a temporary directory."""
    config: dict[str, Any] = json.loads((ROOT / "config.json").read_text())
    for server in config["mcpServers"].values():
        server["args"] = [str(ROOT / arg) for arg in server["args"]]
    config.update(changes)
    return config


def start_gateway(
    config: dict[str, Any], port: int, env: dict[str, str] | None = None, log: IO[str] | None = None
) -> tuple[subprocess.Popen[bytes], Path]:
    """`toolsift serve` on `config` in its own process; returns it and its working directory."""
    workdir = Path(tempfile.mkdtemp(prefix="toolsift-bench-"))
    (workdir / "config.json").write_text(json.dumps(config))
    toolsift = Path(sys.executable).parent / "toolsift"
    command = [str(toolsift), "serve", "--config", str(workdir / "config.json"), "--port", str(port)]
    process = subprocess.Popen(
        [*command, "--log-level", "warning"],
        env=env,
        stdout=log or subprocess.DEVNULL,
        stderr=subprocess.STDOUT if log else subprocess.DEVNULL,
    )
    return process, workdir
