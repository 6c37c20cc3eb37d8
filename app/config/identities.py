"""Gateway keys as identities: a plain string is a password (its identity is `key-` and 16 hex digits of its
SHA-256); an object names who holds it and what it may reach: a tool set, models, limits and its own MCP
credentials.

A name keys all of that caller's state (sessions, stored responses, the MCP front's enabled tools, quotas) and
labels its metrics, so names are plain tokens that can never spell a key-derived id or the anonymous one.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import Discriminator, Field, Tag, model_validator

from app.config.base import Strict

NAME_PATTERN = r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$"
RESERVED_NAMES = frozenset({"anonymous"})
KEY_PREFIX = "key-"  # the ids of plain-string keys


class IdentityLimits(Strict):
    """What one identity may use; each unset limit is no limit."""

    requests_per_minute: int | None = Field(None, ge=1)
    tokens_per_day: int | None = Field(None, ge=1, description="upstream tokens (prompt and completion), per UTC day")
    concurrent: int | None = Field(None, ge=1, description="requests in flight at once, over every replica")
    stored_bytes: int | None = Field(
        None, ge=4096, description="this identity's share of each store (sessions, responses), in bytes"
    )


class IdentityConfig(Strict):
    name: str = Field(pattern=NAME_PATTERN, description="letters, digits, '_', '.', '-'; starts with a letter")
    key: str = Field(description="an unset ${VAR} here stops start-up, as for every gateway key")
    tool_set: str | None = Field(None, description="the only tools it sees, on every front; a request narrows it")
    models: list[str] | None = Field(None, description="the only models it may ask for (aliases or upstream names)")
    limits: IdentityLimits = Field(default_factory=lambda: IdentityLimits())
    secrets: dict[str, str] = Field(
        default_factory=dict, description="values MCP servers reference as ${identity.NAME}, for this identity only"
    )

    @model_validator(mode="after")
    def _name_is_no_other_id(self) -> IdentityConfig:
        if self.name in RESERVED_NAMES or self.name.lower().startswith(KEY_PREFIX):
            raise ValueError(f"name {self.name!r} is reserved: 'anonymous' and names starting 'key-' are not allowed")
        return self


def _kind(value: object) -> str:
    return "identity" if isinstance(value, dict | IdentityConfig) else "key"


# Told apart by their JSON type, so a wrong identity object is reported as one, not also as "not a string".
ApiKey = Annotated[Annotated[str, Tag("key")] | Annotated[IdentityConfig, Tag("identity")], Discriminator(_kind)]


def key_of(entry: ApiKey) -> str:
    return entry if isinstance(entry, str) else entry.key


def identity_problems(entries: list[ApiKey]) -> list[str]:
    """Two entries with one name or one key: which identity a request is would depend on the order."""
    problems: list[str] = []
    names: set[str] = set()
    keys: set[str] = set()
    for index, entry in enumerate(entries):
        key = key_of(entry)
        if key and key in keys:
            problems.append(f"api_keys[{index}]: the same key is listed twice")
        keys.add(key)
        if isinstance(entry, IdentityConfig):
            if entry.name in names:
                problems.append(f"api_keys[{index}].name: {entry.name!r} is used twice")
            names.add(entry.name)
    return problems


def secret_names(text: str) -> list[str]:
    """The `${identity.NAME}` references in a header or env value."""
    return IDENTITY_REFERENCE.findall(text)


IDENTITY_REFERENCE = re.compile(r"\$\{identity\.([A-Za-z_][A-Za-z0-9_]*)\}")
