"""`toolsift check` on a pasted `mcpServers` block: which servers `tool_discovery.defer` "auto" defers, and why."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.unit.core.test_auto_defer import DEMO, pasted

TOOLSIFT = str(Path(sys.executable).parent / "toolsift")


def check(tmp_path: Path, config: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return subprocess.run([TOOLSIFT, "check", "--config", str(path)], capture_output=True, text=True, timeout=120)


def why_rows(stdout: str) -> dict[str, tuple[str, str]]:
    """`check`'s deferral section: server -> (status, why)."""
    section = stdout.split("\ndeferral (", 1)[1].splitlines()[2:]
    return {name: (status, why) for name, status, why in (line.split(maxsplit=2) for line in section)}


def test_check_shows_the_pasted_demo_block_deferred_and_why(tmp_path: Path) -> None:
    result = check(tmp_path, {"mcpServers": pasted()})
    assert result.returncode == 0, result.stderr
    statuses = {line.split()[0]: line.split()[4] for line in result.stdout.splitlines()[2:7]}
    assert statuses == dict.fromkeys(DEMO, "deferred")
    assert "deferral (tool_discovery.defer: auto, auto_defer_min_tokens: 4,000 o200k_base tokens):" in result.stdout
    rows = why_rows(result.stdout)
    total = int(rows["weather"][1].split()[1].replace(",", ""))
    assert 4000 < total < 5000, "the demo's tools are about 4,400 tokens"
    for name in DEMO:
        status, why = rows[name]
        assert status == "deferred" and why.startswith(f"auto: {total:,} tokens of tools without defer_loading > 4,000")
    own = [int(why.split("this server: ")[1].split()[0].replace(",", "")) for _, why in rows.values()]
    assert sum(own) == total, "each server's share is shown"
    assert "warning: no provider is configured" in result.stderr


def test_check_keeps_a_server_with_defer_loading_false_loaded(tmp_path: Path) -> None:
    servers = pasted(weather={"defer_loading": False})
    discovery = {"auto_defer_min_tokens": 3000}
    provider = {"providers": {"openai": {"api_key": "${TOOLSIFT_TEST_UNSET_KEY}"}}}
    result = check(tmp_path, {"mcpServers": servers, "tool_discovery": discovery, **provider})
    assert result.returncode == 0, result.stderr
    rows = why_rows(result.stdout)
    assert rows.pop("weather") == ("loaded", "defer_loading: false")
    assert {status for status, _ in rows.values()} == {"deferred"}
    assert all(why.startswith("auto: ") and "> 3,000" in why for _, why in rows.values())
    unset = "warning: no provider can serve: provider 'openai' has no API key (set TOOLSIFT_TEST_UNSET_KEY)"
    assert unset in result.stderr
