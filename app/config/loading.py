"""Reading a config: JSON from a file, `${VAR}` expanded, validated, every problem reported at once.

Each problem is one line naming its key (`providers.openai.max_retries: ...`), so a bad deploy fails loudly at
start-up with everything to fix, instead of one error per attempt or a failure at the first request. The schema
and the references between sections are checked in the same pass. What does not stop the gateway (an unset
variable, another client's key ignored) is kept for `config_warnings` and `notes`: `check` prints what `serve` logs.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from app.config.env import expand_env
from app.config.json_text import describe as json_problems
from app.config.pasted import ignored_keys
from app.config.problems import describe
from app.config.references import reference_problems
from app.config.root import Config


class ConfigError(Exception):
    """Raised with every problem found, one human-readable line each, and the warnings the config would have
    started with (so a config is fixed in one pass, unset variables included)."""

    def __init__(self, problems: list[str], warnings: list[str] | None = None) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems
        self.warnings = warnings or []


def parse_config(raw: Any, environ: dict[str, str] | None = None, base_dir: Path | None = None) -> Config:
    """Validate an already-decoded JSON document; raise ConfigError listing every problem."""
    if not isinstance(raw, dict):
        raise ConfigError(["config: the top level must be a JSON object"])
    if "servers" in raw and "mcpServers" not in raw:
        raw = {**raw, "mcpServers": raw["servers"]}
        raw.pop("servers")
    unset: dict[str, str] = {}
    from_env: dict[str, list[str]] = {}
    expanded = expand_env(raw, dict(os.environ) if environ is None else environ, unset, "", from_env)
    try:
        config = Config.model_validate(expanded)
    except ValidationError as exc:
        # The references are checked on the document too: a wrong provider shows beside a misspelt key.
        problems = list(dict.fromkeys(describe(exc, Config) + reference_problems(expanded)))
        raise ConfigError(problems, unset_warnings(unset)) from None
    unset_keys = [  # an identity's secret is its MCP credential, not a key: unset, it is a warning
        f"{path}: environment variable {name} is not set"
        for path, name in unset.items()
        if path.startswith("auth.") and ".secrets." not in path
    ]
    if unset_keys:
        raise ConfigError(unset_keys)  # an empty gateway key would silently open the gateway
    config.unset_env = unset
    config.from_env = from_env
    config.base_dir = base_dir or Path.cwd()
    ignored = ignored_keys(expanded.get("mcpServers"))
    if ignored:
        config.notes.append(f"ignored what other MCP clients write, not used by toolsift: {', '.join(ignored)}")
    return config


def load_config(path: str | os.PathLike[str], environ: dict[str, str] | None = None) -> Config:
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8-sig")  # a byte-order mark (some Windows editors write one) is fine
    except OSError as exc:
        raise ConfigError([f"{file}: cannot read config file ({exc.strerror or exc})"]) from None
    except UnicodeDecodeError as exc:
        raise ConfigError([f"{file}: not UTF-8 text (byte {exc.start}): save it as UTF-8"]) from None
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(json_problems(str(file), text, exc)) from None
    return parse_config(raw, environ, base_dir=file.resolve().parent)


def config_warnings(config: Config) -> list[str]:
    """What the gateway starts without but should have: each unset `${VAR}`, with what its absence does."""
    return unset_warnings(config.unset_env)


def unset_warnings(unset: dict[str, str]) -> list[str]:
    return [f"{path}: environment variable {name} is not set{_consequence(path)}" for path, name in unset.items()]


def _consequence(path: str) -> str:
    parts = path.split(".")
    if parts[0] == "mcpServers" and len(parts) > 3 and parts[2] == "env":
        return f"; server '{parts[1]}' gets {parts[3]} empty"
    if parts[0] == "mcpServers" and len(parts) > 3 and parts[2] == "headers":
        return f"; server '{parts[1]}' gets its {parts[3]} header without it"
    if parts[0] == "auth" and len(parts) > 3 and parts[2] == "secrets":
        return f"; servers that reference ${{identity.{parts[3]}}} get it empty for this identity"
    if parts[0] == "providers" and parts[-1] == "api_key":
        return f"; calls to provider '{parts[1]}' fail until it is set"
    return "; the value is empty"
