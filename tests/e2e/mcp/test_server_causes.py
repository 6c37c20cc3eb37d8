"""Servers that say why: a stdio server that cannot start, or dies, is shown with its cause (the missing file with
its resolved path, the command not on PATH, the exit code, the timeout) and the last lines it wrote on stderr, in
`toolsift check`, `/healthz`, the console's admin API and the log, with secrets redacted; and the environment a
server gets is exactly the documented one. Real processes throughout."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.config import parse_config
from app.mcp.client.connections import McpManager
from tests.support import ROOT, SERVERS, free_port
from tests.support.mcp import wait_for

TOOLSIFT = str(Path(sys.executable).parent / "toolsift")
TEST_SERVERS = ROOT / "tests" / "servers"
SECRET = "crash-token-4f9a1c"
CRASH = (
    "import os, sys\n"
    "print('starting the crash server', file=sys.stderr)\n"
    "print('token in use: ' + os.environ['CRASH_TOKEN'], file=sys.stderr)\n"
    "print('RuntimeError: no database at db.sqlite', file=sys.stderr)\n"
    "sys.exit(3)\n"
)


@pytest.fixture
def broken_config(tmp_path: Path) -> Path:
    """Five servers: one that works, a script path with a typo, a command not installed, one that exits with a
    cause on stderr (quoting a secret), one that never answers the handshake. Relative paths, as users write."""
    shutil.copytree(SERVERS, tmp_path / "servers")
    (tmp_path / "crash.py").write_text(CRASH)
    config = {
        "mcpServers": {
            "weather": {"command": "python", "args": ["servers/weather.py"], "defer_loading": True},
            "typo": {"command": "python", "args": ["servers/wether.py"]},
            "absent": {"command": "toolsift-no-such-server"},
            "crash": {"command": "python", "args": ["crash.py"], "env": {"CRASH_TOKEN": "${CRASH_TOKEN}"}},
            "silent": {"command": "python", "args": ["-c", "import time; time.sleep(60)"], "startup_timeout": 2},
        }
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return path


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CRASH_TOKEN": SECRET, "TOOLSIFT_URL": f"http://127.0.0.1:{free_port()}"}
    return subprocess.run([TOOLSIFT, *args], capture_output=True, text=True, timeout=180, cwd=cwd, env=env)


def test_check_names_each_servers_cause_and_shows_its_stderr(broken_config: Path) -> None:
    result = run("check", "--config", str(broken_config), cwd=Path("/"))  # a cwd elsewhere: paths are the config's
    assert result.returncode == 1, result.stderr
    rows = {line.split()[0]: line for line in result.stdout.splitlines()[2:7]}
    folder = broken_config.parent
    assert rows["weather"].split()[:4] == ["weather", "stdio", "up", "4"]
    assert rows["typo"].endswith(
        f"file not found: 'servers/wether.py' is {folder / 'servers' / 'wether.py'} (a relative path starts in the "
        f"server's cwd, {folder}); exited with code 2"
    )
    assert rows["absent"].endswith("command 'toolsift-no-such-server' not found on the server's PATH")
    assert rows["crash"].endswith(
        "exited with code 3 before the MCP handshake; stderr: RuntimeError: no database at db.sqlite"
    )
    assert rows["silent"].endswith(
        "did not start within 2s (no answer to the MCP handshake; a server that starts slowly needs a longer "
        "mcp_startup_timeout, or its own startup_timeout)"
    )
    tail = result.stdout.split("crash is down; the last lines it wrote on stderr:\n", 1)[1].splitlines()[:3]
    assert tail == [
        "  | starting the crash server",
        "  | token in use: [redacted]",
        "  | RuntimeError: no database at db.sqlite",
    ]
    assert "typo is down; the last lines it wrote on stderr:\n  | " in result.stdout, "python's own complaint"
    assert SECRET not in result.stdout + result.stderr
    assert "4 server(s) down: typo, absent, crash, silent" in result.stderr


def test_healthz_the_console_and_the_log_show_the_cause(broken_config: Path, tmp_path: Path) -> None:
    port = free_port()
    log = tmp_path / "gateway.log"
    env = {**os.environ, "CRASH_TOKEN": SECRET}
    with log.open("w") as out:
        process = subprocess.Popen(
            [TOOLSIFT, "serve", "--config", str(broken_config), "--port", str(port)], stdout=out, stderr=out, env=env
        )
    try:
        base = f"http://127.0.0.1:{port}"
        health = _health_once_settled(base, process)
        crash = health["servers"]["crash"]
        assert crash["state"] == "down"
        cause = "exited with code 3 before the MCP handshake; stderr: RuntimeError: no database at db.sqlite"
        assert crash["error"] == cause
        assert crash["stderr"] == [
            "starting the crash server",
            "token in use: [redacted]",
            "RuntimeError: no database at db.sqlite",
        ]
        assert health["servers"]["typo"]["error"].startswith("file not found: 'servers/wether.py' is ")
        assert "stderr" not in health["servers"]["weather"], "a running server's chatter stays in the log"
        console = httpx.get(f"{base}/admin/servers", timeout=10).json()["servers"]
        assert next(s for s in console if s["name"] == "crash")["stderr"] == crash["stderr"]
    finally:
        process.terminate()
        process.wait(30)
    written = log.read_text()
    assert "mcp stderr server=crash RuntimeError: no database at db.sqlite" in written
    assert "mcp server down server=crash error=exited with code 3 before the MCP handshake" in written
    assert "mcp server down server=absent error=command 'toolsift-no-such-server' not found" in written
    assert SECRET not in written and SECRET not in json.dumps(health)


def _health_once_settled(base: str, process: subprocess.Popen[bytes]) -> dict[str, Any]:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert process.poll() is None, "the gateway exited"
        try:
            health: dict[str, Any] = httpx.get(f"{base}/healthz", timeout=5).json()
        except httpx.HTTPError:
            time.sleep(0.2)
            continue
        if all(server["state"] != "connecting" for server in health["servers"].values()):
            return health
        time.sleep(0.2)
    raise AssertionError("the servers did not settle")


async def test_a_server_that_dies_while_up_is_down_with_its_exit_code(tmp_path: Path) -> None:
    config = parse_config(
        {"mcpServers": {"crashy": {"command": "python", "args": [str(TEST_SERVERS / "crashy.py")]}}}, environ={}
    )
    manager = McpManager(config)
    await manager.start()
    try:
        connection = manager.connections["crashy"]
        assert connection.state.value == "up"
        await manager.call_tool("crashy", "crash", {})
        await wait_for(lambda: connection.state.value == "down")
        assert connection.error == "connection lost; exited with code 3"
    finally:
        await manager.stop()


async def test_exactly_the_documented_environment_reaches_a_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in {
        "SSL_CERT_FILE": "/etc/corp/ca.pem",
        "NODE_EXTRA_CA_CERTS": "/etc/corp/ca.pem",
        "HTTPS_PROXY": "http://proxy.corp:3128",
        "no_proxy": "localhost,.corp",
        "OPENAI_API_KEY": "sk-gateway-own",
        "AWS_REGION": "eu-west-1",
        "TEAM_TOKEN": "team-123",
    }.items():
        monkeypatch.setenv(name, value)
    (tmp_path / "work").mkdir()
    raw = {
        "mcp_inherit_env": ["AWS_*"],
        "mcpServers": {
            "env": {
                "command": "python",
                "args": [str(TEST_SERVERS / "environment.py")],
                "cwd": "work",
                "inherit_env": ["TEAM_TOKEN"],
                "env": {"OWN": "1", "HTTPS_PROXY": ""},
            }
        },
    }
    config = parse_config(raw, environ={})
    config.base_dir = tmp_path
    manager = McpManager(config)
    await manager.start()
    try:
        text, failed = await manager.call_tool("env", "variables", {})
        assert not failed, text
        got = json.loads(text)
        cwd, _ = await manager.call_tool("env", "working_directory", {})
    finally:
        await manager.stop()
    assert got["SSL_CERT_FILE"] == got["NODE_EXTRA_CA_CERTS"] == "/etc/corp/ca.pem"
    assert got["no_proxy"] == "localhost,.corp" and got["HTTPS_PROXY"] == "", "its env wins"
    assert got["AWS_REGION"] == "eu-west-1" and got["TEAM_TOKEN"] == "team-123" and got["OWN"] == "1"
    assert got["PATH"].split(os.pathsep)[0] == str(Path(sys.executable).parent)
    assert "OPENAI_API_KEY" not in got
    basics = {"HOME", "LOGNAME", "SHELL", "TERM", "USER"}
    documented = basics | {"PATH", "SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS", "HTTPS_PROXY", "no_proxy", "AWS_REGION",
                           "TEAM_TOKEN", "OWN"}  # fmt: skip
    inherited = {name for name in os.environ if name in _standard() or name.startswith("AWS_")}
    extra = set(got) - documented - inherited
    assert not {name for name in extra if not name.startswith(("LC_", "PYTHON", "_"))}, extra
    assert cwd == str(tmp_path / "work")


def _standard() -> tuple[str, ...]:
    from app.mcp.client.stdio import STANDARD_ENV

    return STANDARD_ENV
