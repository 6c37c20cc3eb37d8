"""Mistakes in a config through the real command line: `toolsift check` and `toolsift serve` both stop on them with
the same lines, every mistake at once; what does not stop the gateway (an unset variable, another client's keys)
is printed by `check` and logged by `serve` in the same words."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.support import SERVERS, free_port

TOOLSIFT = str(Path(sys.executable).parent / "toolsift")
PLANTED = {
    "providers": {"openai": {"api_key": "${OPENAI_API_KEY}"}},
    "models": {"fast": {"provider": "openai", "model": "gpt-4.1-mini"}},
    "mcpServers": {
        "weather": {"command": "python", "arg": ["servers/weather.py"]},
        "notes": {"command": "python", "args": ["servers/notes.py"], "defer_load": True},
        "finance": {"command": "python", "args": ["servers/finance.py"], "defer_loading": "yes"},
        "search": {"url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer ${SEARCH_TOKEN}"}},
    },
    "tool_sets": {"money": {"servers": {"finanse": True}}},
}


def toolsift(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key not in ("OPENAI_API_KEY", "SEARCH_TOKEN")}
    return subprocess.run([TOOLSIFT, *args], capture_output=True, text=True, timeout=timeout, cwd=cwd, env=env)


def test_five_planted_mistakes_are_named_at_once_by_check_and_by_serve(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(PLANTED))
    check = toolsift("check", "--config", str(path), cwd=tmp_path)
    assert check.returncode == 2 and check.stdout == ""
    assert check.stderr.splitlines() == [
        f"toolsift: invalid config {path}:",
        "  mcpServers.weather.arg: unknown key; did you mean 'args'?",
        "  mcpServers.notes.defer_load: unknown key; did you mean 'defer_loading'?",
        "  mcpServers.finance.defer_loading: expected true or false (a JSON boolean), not 'yes'",
        "  tool_sets.money.servers: unknown server 'finanse'; servers are finance, notes, search, weather",
        "warning: providers.openai.api_key: environment variable OPENAI_API_KEY is not set; calls to provider "
        "'openai' fail until it is set",
        "warning: mcpServers.search.headers.Authorization: environment variable SEARCH_TOKEN is not set; server "
        "'search' gets its Authorization header without it",
    ]
    serve = toolsift("serve", "--config", str(path), "--port", str(free_port()), cwd=tmp_path)
    assert serve.returncode == 2 and serve.stderr == check.stderr, "serve stops on the same problems, in the same words"


def test_a_json_syntax_error_from_the_command_line(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text('{\n  "mcpServers": {\n    "time": {"command": "mcp-server-time"},\n  }\n}\n')
    result = toolsift("check", "--config", str(path), cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines()[1:] == [
        f"  {path}: invalid JSON at line 4 column 3: Expecting property name enclosed in double quotes",
        "      4 |   }",
        "        |   ^",
        "  hint: a comma after the last item (line 3): JSON allows none; remove it",
    ]


def test_what_check_prints_serve_logs_in_the_same_words(tmp_path: Path) -> None:
    config = {
        "providers": {"openai": {"api_key": "${OPENAI_API_KEY}"}},
        "mcpServers": {
            "weather": {"command": "python", "args": [str(SERVERS / "weather.py")], "alwaysAllow": ["x"]},
            "notes": {"command": "python", "args": [str(SERVERS / "notes.py")], "env": {"NOTES_KEY": "${NOTES_KEY}"}},
        },
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    check = toolsift("check", "--config", str(path), cwd=tmp_path)
    assert check.returncode == 0, check.stderr
    said = [line.split(": ", 1)[1] for line in check.stderr.splitlines() if line.startswith(("note: ", "warning: "))]
    assert said[:3] == [
        "ignored what other MCP clients write, not used by toolsift: mcpServers.weather.alwaysAllow",
        "providers.openai.api_key: environment variable OPENAI_API_KEY is not set; calls to provider 'openai' fail "
        "until it is set",
        "mcpServers.notes.env.NOTES_KEY: environment variable NOTES_KEY is not set; server 'notes' gets NOTES_KEY "
        "empty",
    ]
    log = tmp_path / "serve.log"
    port = free_port()
    env = {key: value for key, value in os.environ.items() if key not in ("OPENAI_API_KEY", "NOTES_KEY")}
    with log.open("w") as out:
        process = subprocess.Popen([TOOLSIFT, "serve", "--config", str(path), "--port", str(port)], stdout=out,
                                   stderr=out, env=env, cwd=tmp_path)  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
    finally:
        process.terminate()
        process.wait(30)
    written = log.read_text()
    for line in said[:3]:
        assert line in written, line
    assert f"config {path} (--config)" in written
