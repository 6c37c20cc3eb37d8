"""Config problems from the command line: `toolsift serve` exits non-zero with one line per problem."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support import ROOT


def test_cli_exits_non_zero_with_one_line_per_problem(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"max_rounds": "many", "mcpServers": {"x": {}}}))
    result = subprocess.run(
        [sys.executable, "-m", "app.cli", "serve", "--config", str(path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert lines[0] == f"toolsift: invalid config {path}:"
    assert sorted(line.strip().split(":")[0] for line in lines[1:]) == ["max_rounds", "mcpServers.x"]
