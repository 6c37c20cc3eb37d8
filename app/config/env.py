"""`${VAR}` and `${VAR:-default}` in config strings, expanded from the environment.

Expansion records where each value came from: an unset variable's path lets errors name the variable, and the
values taken from the environment are secrets the gateway redacts.
"""

from __future__ import annotations

import re
from typing import Any

_ENV_PATTERN = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def expand_env(
    value: Any,
    environ: dict[str, str],
    unset: dict[str, str],
    path: str = "",
    from_env: dict[str, list[str]] | None = None,
) -> Any:
    """Expand `${VAR}` and `${VAR:-default}` in every string; record `path -> VAR` for unset variables and, in
    `from_env`, `path -> values` taken from the environment."""
    if isinstance(value, str):

        def substitute(match: re.Match[str]) -> str:
            name, default = match.group(1), match.group(2)
            found = environ.get(name)
            if found:
                if from_env is not None:
                    from_env.setdefault(path, []).append(found)
                return found
            if default is not None:
                return default
            unset[path] = name
            return ""

        return _ENV_PATTERN.sub(substitute, value)
    if isinstance(value, dict):
        return {
            key: expand_env(item, environ, unset, f"{path}.{key}" if path else key, from_env)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [expand_env(item, environ, unset, f"{path}[{index}]", from_env) for index, item in enumerate(value)]
    return value
