"""`toolsift demo` says when it is ready, and ready means search by meaning too: the first request a person sends
after the line is searched as every later one (before, it often ran while the tools were still being embedded, and
the README's example made three searches instead of two)."""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

from tests.support import ROOT, free_port

TOOLSIFT = str(Path(sys.executable).parent / "toolsift")


def test_the_ready_line_comes_once_search_by_meaning_is_ready(tmp_path: Path) -> None:
    port = free_port()
    environ = {**os.environ, "TOOLSIFT_HOME": str(tmp_path / "home")}  # an empty cache: every tool is embedded
    process = subprocess.Popen(
        [TOOLSIFT, "demo", "--config", str(ROOT / "config.json"), "--port", str(port)],
        cwd=tmp_path, env=environ, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    lines: queue.Queue[str] = queue.Queue()
    assert process.stderr is not None
    threading.Thread(target=lambda: [lines.put(line) for line in process.stderr or ()], daemon=True).start()
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            line = lines.get(timeout=max(deadline - time.monotonic(), 0.1))
            if f"ready: {base}" in line:
                break
        search = httpx.get(f"{base}/healthz", timeout=10).json()["search"]
        assert search["mode"] == "hybrid" and search["pending"] == 0, search
        ready = httpx.get(f"{base}/readyz", timeout=10)
        assert ready.status_code == 200 and ready.json()["problems"] == []
    finally:
        process.terminate()
        process.wait(30)
