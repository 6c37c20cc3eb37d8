"""The real client programs the end-to-end tests drive, and an npm-published MCP server a user would add, from the
versions pinned in tests/package.json.

They are installed by `make clients` (Node.js and npm needed). A test that needs one skips and says how to get it;
with CI=true a missing program fails instead, so a broken install cannot pass as a skip. `TOOLSIFT_CLIENTS_DIR`
names another `node_modules` to take them from (`make check-clients` points it at the newest releases)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

NODE_MODULES = Path(os.environ.get("TOOLSIFT_CLIENTS_DIR") or Path(__file__).resolve().parent.parent / "node_modules")
PROGRAMS = {"claude": "@anthropic-ai/claude-code", "codex": "@openai/codex"}


def _missing(what: str) -> None:
    message = f"{what} is not installed: run `make clients` (needs Node.js and npm)"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


def client_program(name: str) -> Path:
    """The path of a pinned program's executable (`claude`, `codex`)."""
    path = NODE_MODULES / ".bin" / name
    if not path.exists():
        _missing(PROGRAMS.get(name, name))
    return path


def package_version(package: str) -> str:
    """The installed version of an npm package, for the test's report."""
    manifest = NODE_MODULES / package / "package.json"
    if not manifest.exists():
        _missing(package)
    return str(json.loads(manifest.read_text())["version"])


def node_modules() -> Path:
    """The folder a Node script must run beside to import the pinned SDKs (`ai`, `@ai-sdk/openai`)."""
    if not (NODE_MODULES / "ai").exists():
        _missing("the Vercel AI SDK")
    return NODE_MODULES


def npm_package(package: str) -> Path:
    """The folder a Node script must run beside to import a pinned npm package (`openai`)."""
    if not (NODE_MODULES / package / "package.json").exists():
        _missing(package)
    return NODE_MODULES


def npm_mcp_server(package: str) -> Path:
    """The folder to run `npx --no PACKAGE` in, as a user's npx-style `mcpServers` entry does: the pinned install,
    where npx finds the package without the network."""
    if not (NODE_MODULES / package / "package.json").exists():
        _missing(package)
    return NODE_MODULES.parent
