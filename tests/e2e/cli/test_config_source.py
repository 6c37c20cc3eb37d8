"""The command line never uses `./config.json` silently: when it starts the servers itself, it says which config,
and where that choice came from (--config, $TOOLSIFT_CONFIG or the default)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support import SERVERS, free_port

TOOLSIFT = str(Path(sys.executable).parent / "toolsift")


def run(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {key: value for key, value in os.environ.items() if key != "TOOLSIFT_CONFIG"}
    environ.update(TOOLSIFT_URL=f"http://127.0.0.1:{free_port()}", **env)
    return subprocess.run([TOOLSIFT, *args], capture_output=True, text=True, timeout=120, cwd=cwd, env=environ)


def test_the_fallback_names_the_config_it_starts_from(tmp_path: Path) -> None:
    config = {"mcpServers": {"weather": {"command": "python", "args": [str(SERVERS / "weather.py")]}}}
    (tmp_path / "config.json").write_text(json.dumps(config))
    (tmp_path / "other.json").write_text(json.dumps(config))

    default = run("tools", cwd=tmp_path)
    assert default.returncode == 0, default.stderr
    lines = default.stderr.splitlines()
    note = next(index for index, line in enumerate(lines) if line.startswith("note: no gateway answered"))
    assert lines[note + 1] == (
        f"config: {tmp_path / 'config.json'} (the default, ./config.json here; --config or $TOOLSIFT_CONFIG to choose)"
    )
    variable = run("tools", cwd=tmp_path, TOOLSIFT_CONFIG=str(tmp_path / "other.json"))
    assert f"config: {tmp_path / 'other.json'} ($TOOLSIFT_CONFIG)" in variable.stderr
    given = run("check", "--config", "other.json", cwd=tmp_path)
    assert given.returncode == 0 and f"config: {tmp_path / 'other.json'} (--config)" in given.stderr
    assert given.stdout.splitlines()[0] == "config: ok"
    assert "connecting 1 MCP server...\n" in given.stderr, "the count agrees in number"


def test_check_from_another_folder_says_where_it_looked_and_how_to_name_a_config(tmp_path: Path) -> None:
    elsewhere = run("check", cwd=tmp_path)
    assert elsewhere.returncode == 2 and "Traceback" not in elsewhere.stderr
    assert f"looked for {tmp_path / 'config.json'}" in elsewhere.stderr and "--config PATH" in elsewhere.stderr
