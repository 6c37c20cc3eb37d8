"""`toolsift tools` shows always_load tools as loaded and warns of names the server does not have."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support import ROOT, SERVERS, free_port

TOOLSIFT = str(Path(sys.executable).parent / "toolsift")


def test_toolsift_tools_shows_always_loaded_tools_as_loaded_and_warns_of_unknown_names(tmp_path: Path) -> None:
    config = {
        "mcpServers": {
            "notes": {
                "command": "python",
                "args": [str(SERVERS / "notes.py")],
                "defer_loading": True,
                "always_load": ["get_note", "list_notes", "get_notes"],
            }
        }
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    result = subprocess.run(
        [TOOLSIFT, "tools", "--config", str(path), "--url", f"http://127.0.0.1:{free_port()}"],  # no gateway there
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    status = {line.split()[0]: line.split()[2] for line in result.stdout.splitlines()[1:]}
    assert status["notes__get_note"] == "loaded" and status["notes__list_notes"] == "loaded"
    assert status["notes__create_note"] == "deferred" and list(status.values()).count("loaded") == 2
    assert "mcpServers.notes.always_load: unknown tools get_notes; the server's tools are: add_tag, " in result.stderr
