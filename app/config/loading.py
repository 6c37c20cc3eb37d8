"""Reading a config: JSON from a file, `${VAR}` expanded, validated, every problem reported at once.

Each problem is one line naming its key (`providers.openai.max_retries: ...`), so a bad deploy fails loudly at
start-up with everything to fix, instead of one error per attempt or a failure at the first request.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from app.config.env import expand_env
from app.config.mcp import ExcludeSpec
from app.config.root import Config


class ConfigError(Exception):
    """Raised with every problem found, one human-readable line each."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


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
        raise ConfigError(_describe(exc)) from None
    unset_keys = [
        f"{path}: environment variable {name} is not set" for path, name in unset.items() if path.startswith("auth.")
    ]
    if unset_keys:
        raise ConfigError(unset_keys)  # an empty gateway key would silently open the gateway
    config.unset_env = unset
    config.from_env = from_env
    config.base_dir = base_dir or Path.cwd()
    return config


def load_config(path: str | os.PathLike[str], environ: dict[str, str] | None = None) -> Config:
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError([f"{file}: cannot read config file ({exc.strerror or exc})"]) from None
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError([f"{file}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"]) from None
    return parse_config(raw, environ, base_dir=file.resolve().parent)


def _describe(exc: ValidationError) -> list[str]:
    lines: list[str] = []
    for error in exc.errors():
        parts = [str(part) for part in error["loc"]]
        message = str(error["msg"]).removeprefix("Value error, ")
        if any(_is_union_tag(part) for part in parts):
            parts = [part for part in parts if not _is_union_tag(part)]
            message = 'expected true, false, a list of tool names, or {"exclude": [tool names]}'
        elif error["type"] == "extra_forbidden":
            message = "unknown key"
        # Cross-section checks run on the whole config and already name their keys.
        prefix = f"{'.'.join(parts)}: " if parts else ""
        lines.extend(f"{prefix}{line}" for line in message.split("\n"))
    return list(dict.fromkeys(lines))


def _is_union_tag(part: str) -> bool:
    """Whether a location part names a ServerSelection member (pydantic tags union errors with the type)."""
    return part in {"bool", ExcludeSpec.__name__} or part.startswith("list[")
