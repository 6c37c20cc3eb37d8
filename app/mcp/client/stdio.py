"""Starting a stdio MCP server: the environment it gets, where it starts, and why it did not.

A server gets a clean environment, never the gateway's secrets: the MCP SDK's basics (HOME, LOGNAME, PATH, SHELL,
TERM, USER), PATH with the gateway's interpreter directory first (so `python` and commands installed beside
toolsift resolve there), the standard TLS and proxy variables (so a server behind a corporate proxy or CA works as
it does in the user's shell), what `mcp_inherit_env` and the server's `inherit_env` name, and its own `env`, which
wins. When a start fails, `start_problem` names the cause a person can fix (a command not on PATH, a script path
that resolves to no file, a missing cwd); the stderr tail and exit code come from app/mcp/client/stderr.py.
"""

from __future__ import annotations

import difflib
import functools
import itertools
import os
import re
import shutil
import sys
from collections.abc import Callable, Mapping
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any, TextIO

from app.config import McpServerConfig
from app.mcp.client.http_bound import bounded_remote
from app.mcp.client.pipe import PipeTransport

# Passed to every stdio server when the gateway has them: a custom CA or a proxy is the machine's, not a secret.
STANDARD_ENV = (
    "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS",
    "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "no_proxy", "all_proxy",
)  # fmt: skip
# Commands whose first file-like argument is a script they run: a missing one is the cause of their exit.
INTERPRETER = re.compile(r"(python[\d.]*w?|node(js)?|bun|ruby|perl|php|sh|bash|java|tsx|ts-node)(\.exe)?")
SCRIPT_SUFFIXES = (".py", ".pyz", ".js", ".mjs", ".cjs", ".ts", ".mts", ".rb", ".pl", ".php", ".sh", ".jar")
INLINE_CODE = ("-c", "-m", "-e", "--eval", "-p", "--print", "-r", "--require", "--import")
INSTALL_HINTS = {
    "uvx": "install uv (it provides uvx)",
    "uv": "install uv",
    "npx": "install Node.js (it provides npx)",
    "node": "install Node.js",
    "docker": "install Docker",
}


def server_environment(
    config: McpServerConfig, inherit: list[str], environ: Mapping[str, str] = os.environ
) -> dict[str, str]:
    """What a stdio server gets on top of the MCP SDK's basics: PATH, the standard and inherited variables, its
    own `env` last."""
    patterns = [*inherit, *config.inherit_env]
    found = {
        name: value
        for name, value in environ.items()
        if name in STANDARD_ENV or any(fnmatchcase(name, pattern) for pattern in patterns)
    }
    found["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), environ.get("PATH", "")])
    return {**found, **config.env}


def server_cwd(config: McpServerConfig, base_dir: Path) -> Path:
    """Where the server starts: its `cwd` (relative to the config's folder), else the config's folder."""
    cwd = Path(config.cwd).expanduser() if config.cwd else base_dir
    return cwd if cwd.is_absolute() else base_dir / cwd


def build_transport(
    config: McpServerConfig,
    base_dir: Path,
    inherit: list[str] | None = None,
    errlog: TextIO | None = None,
    *,
    max_message_bytes: int = 16 * 1024 * 1024,
    on_spawn: Callable[[Any], None] | None = None,
    max_call_bytes: int | None = None,
    call_seconds: float | None = None,
) -> Any:
    if config.command:
        return PipeTransport(
            config.command,
            config.args,
            env=server_environment(config, inherit or []),
            cwd=str(server_cwd(config, base_dir)),
            errlog=errlog,
            max_message_bytes=max_message_bytes,
            on_spawn=on_spawn,
        )
    assert config.url is not None
    sse = config.transport_name == "sse"
    return bounded_remote(config.url, config.headers, max_message_bytes, sse, max_call_bytes, call_seconds)


def closed_because(transport: Any) -> str | None:
    """Why the transport itself ended its last connection (a message over the limit), when it did."""
    return getattr(getattr(transport, "bounds", transport), "closed_because", None)


def refusal(transport: Any) -> str | None:
    """What a remote server's last HTTP error answer means, with the likely fix, when it gave one."""
    bounds = getattr(transport, "bounds", None)
    return bounds.refusal() if bounds is not None else None


def start_problem(config: McpServerConfig, base_dir: Path, inherit: list[str] | None = None) -> str | None:
    """The cause of a failed start a person can fix, when one is visible from here; None otherwise."""
    if not config.command:
        return None
    cwd = server_cwd(config, base_dir)
    if not cwd.is_dir():
        return f"cwd {cwd} is not a directory" if cwd.exists() else f"cwd {cwd} does not exist"
    command = config.command
    if os.sep in command or (os.altsep is not None and os.altsep in command):
        path = cwd / Path(command).expanduser()
        if not path.exists():
            return f"command {command!r} not found: {path} does not exist"
        if not os.access(path, os.X_OK) or path.is_dir():
            return f"command {path} is not an executable file"
    else:
        search = server_environment(config, inherit or []).get("PATH", "")
        if shutil.which(command, path=search) is None:
            hint = INSTALL_HINTS.get(command)
            found = f"command {command!r} not found on the server's PATH" + (f" ({hint})" if hint else "")
            return found + _did_you_mean(command, search)
    script = _script(config.args) if INTERPRETER.fullmatch(Path(command).name) else None
    if script is not None:
        path = cwd / Path(script).expanduser()
        if not path.exists():
            return f"file not found: {script!r} is {path} (a relative path starts in the server's cwd, {cwd})"
    return None


@functools.lru_cache(maxsize=64)
def _did_you_mean(command: str, search: str) -> str:
    """The closest command name on the server's PATH, which starts with the gateway's own environment's folder
    (`.venv/bin`, where `make install` puts the servers it installs): a typo, said with where the match is. Asked
    on the event loop at every failed start of a server that keeps being retried, so answered once per command and
    PATH (a command installed later is found before this is asked)."""
    names: dict[str, Path] = {}
    for folder in (Path(folder) for folder in search.split(os.pathsep) if folder):
        try:
            with os.scandir(folder) as entries:
                for entry in itertools.islice(entries, 5000):  # a folder on PATH may hold thousands: enough
                    names.setdefault(entry.name, Path(entry.path))
        except OSError:
            continue
    close = difflib.get_close_matches(command, list(names), n=1, cutoff=0.8)
    return f"; did you mean {close[0]!r} ({names[close[0]]})?" if close else ""


def _script(args: list[str]) -> str | None:
    """The script an interpreter is asked to run (its first argument that looks like a file), if any."""
    for arg in args:
        if arg in INLINE_CODE:
            return None
        if arg.startswith("-"):
            continue
        return arg if arg.endswith(SCRIPT_SUFFIXES) or os.sep in arg else None
    return None
