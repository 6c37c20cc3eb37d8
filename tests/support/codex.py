"""Codex CLI (`codex exec`, the real program pinned in tests/package.json) pointed at a gateway, as the docs'
settings say: a provider in `$CODEX_HOME/config.toml` speaking the Responses API."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.support.clients import client_program

KEY_VARIABLE = "TOOLSIFT_API_KEY"


def codex_config(base_url: str, model: str) -> str:
    """The config.toml docs/fronts-and-clients.md gives, for the gateway at `base_url` (its `/v1`)."""
    return (
        f'model = "{model}"\n'
        'model_provider = "toolsift"\n\n'
        "[model_providers.toolsift]\n"
        'name = "toolsift"\n'
        f'base_url = "{base_url}"\n'
        f'env_key = "{KEY_VARIABLE}"\n'
        'wire_api = "responses"\n'
    )


def builtin_config(base_url: str, model: str, settings: str = "") -> str:
    """The config.toml of Codex's built-in `openai` provider pointed at the gateway (`openai_base_url`), a common
    setup: it speaks the Responses API with OpenAI's own features (WebSockets first, remote compaction)."""
    return f'model = "{model}"\nopenai_base_url = "{base_url}"\n{settings}'


def run_codex(
    prompt: str,
    base_url: str,
    model: str,
    workdir: Path,
    home: Path,
    key: str = "unused",
    timeout: float = 120,
    config: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """`codex exec` run to its end in `workdir`, running its own tools without asking; `home` is its CODEX_HOME
    (and HOME, so nothing of the machine's own setup is read). `config`: a config.toml of its own, instead of
    the docs' provider (the key goes in both variables either reads)."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(config if config is not None else codex_config(base_url, model))
    environment = {
        key: value for key, value in os.environ.items() if not key.startswith(("OPENAI_", "CODEX_", "ANTHROPIC_"))
    }
    environment |= {"CODEX_HOME": str(home), "HOME": str(home), KEY_VARIABLE: key, "NO_COLOR": "1"}
    environment["OPENAI_API_KEY"] = key
    command = [
        str(client_program("codex")), "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
        prompt,
    ]  # fmt: skip
    return subprocess.run(
        command, cwd=workdir, env=environment, stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=timeout, check=False,
    )  # fmt: skip
