"""`cors_origins: ["*"]` would open the gateway to every web page: without gateway keys `toolsift serve` refuses
to start and says why; with keys, `"*"` still never applies to the console and its admin API."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support import ROOT, free_port

TOOLSIFT = str(Path(sys.executable).parent / "toolsift")


def test_a_star_without_keys_stops_start_up_with_the_reason(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"cors_origins": ["https://app.example", "*"]}))
    started = subprocess.run(
        [TOOLSIFT, "serve", "--config", str(config), "--port", str(free_port())],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env=dict(os.environ),
    )
    assert started.returncode != 0
    assert 'cors_origins: "*" lets every web page' in started.stderr and "set auth.api_keys" in started.stderr
