"""bench/tokens.py's demo row measures the bundled example servers: a server the user added to config.json (a
`uvx` command, a remote URL, a script of their own) is skipped with a note, never a bare AssertionError."""

from __future__ import annotations

import asyncio
import importlib
import json
import sys
from pathlib import Path

import pytest

from app.config import load_config
from tests.support import ROOT


def test_servers_that_are_not_bundled_examples_are_skipped_and_said_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))  # the bench puts bench/ first on it
    tokens = importlib.import_module("bench.tokens")
    raw = json.loads((ROOT / "config.json").read_text())
    raw["mcpServers"].update(
        {
            "time": {"command": "uvx", "args": ["mcp-server-time"]},
            "mine": {"command": "python", "args": ["my_server.py"]},
            "remote": {"url": "http://127.0.0.1:9/mcp"},
            "bare": {"command": "my-server"},
        }
    )
    path = ROOT / "config.json"
    copy = tmp_path / "config.json"
    copy.write_text(json.dumps(raw))
    config = load_config(copy, environ={})
    config.base_dir = path.parent
    listings = asyncio.run(tokens.demo_listings(config))
    assert sorted(listings) == ["calendar", "finance", "notes", "textkit", "weather"]
    skipped = capsys.readouterr().err.splitlines()
    assert skipped == [
        f"demo config: skipping server {name!r}: not one of examples/servers/"
        for name in ("time", "mine", "remote", "bare")
    ]
    only_others = load_config(copy, environ={}).model_copy(
        update={"mcp_servers": {"remote": config.mcp_servers["remote"]}}
    )
    with pytest.raises(SystemExit, match="none of the bundled example servers"):
        asyncio.run(tokens.demo_listings(only_others))
