"""The whole config file: every section, the top-level limits, and the checks that span sections."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import ConfigDict, Field, StrictBool, model_validator

from app.config.base import Strict
from app.config.discovery import ToolDiscoveryConfig
from app.config.limits import LimitsConfig
from app.config.mcp import McpFrontConfig, McpLimitsConfig, McpServerConfig, ToolSetConfig
from app.config.providers import ModelConfig, ProviderConfig
from app.config.references import reference_problems
from app.config.secrets import config_secrets
from app.config.service import AuthConfig, ConsoleConfig, ResponsesStoreConfig, SessionConfig, StoreConfig


class Config(Strict):
    providers: dict[str, ProviderConfig] = Field(default_factory=dict)
    default_provider: str | None = None
    models: dict[str, ModelConfig] = Field(default_factory=dict)
    mcp_servers: dict[str, McpServerConfig] = Field(default_factory=dict, alias="mcpServers")
    mcp_limits: McpLimitsConfig = Field(default_factory=lambda: McpLimitsConfig())
    tool_discovery: ToolDiscoveryConfig = Field(default_factory=lambda: ToolDiscoveryConfig())
    tool_sets: dict[str, ToolSetConfig] = Field(default_factory=dict)
    tool_hints: dict[str, dict[str, str]] = Field(default_factory=dict, description="server -> tool -> search text")
    store: StoreConfig = Field(default_factory=lambda: StoreConfig())
    sessions: SessionConfig = Field(default_factory=lambda: SessionConfig())
    responses_store: ResponsesStoreConfig = Field(default_factory=lambda: ResponsesStoreConfig())
    auth: AuthConfig = Field(default_factory=lambda: AuthConfig())
    limits: LimitsConfig = Field(default_factory=lambda: LimitsConfig())
    mcp_front: McpFrontConfig = Field(default_factory=lambda: McpFrontConfig())
    console: ConsoleConfig = Field(default_factory=lambda: ConsoleConfig())
    max_rounds: Annotated[int, Field(ge=1, le=100)] = 10
    max_tool_calls_per_round: int = Field(32, ge=1, le=10_000, description="calls of one reply run; the rest: errors")
    max_searches_per_request: int = Field(16, ge=1, le=10_000, description="searches run in one request, per query")
    max_queries_per_search: int = Field(5, ge=1, le=64, description="queries one search_tools call runs")
    tool_cache_ttl: float = Field(300.0, ge=0, description="seconds; 0 refreshes only on list_changed")
    mcp_startup_timeout: float = Field(30.0, gt=0)
    mcp_inherit_env: list[str] = Field(
        default_factory=list, description="more variables (or NAME* patterns) every stdio server gets from the gateway"
    )
    tool_call_timeout: float = Field(60.0, gt=0)
    stream_keepalive_seconds: float = Field(5.0, gt=0)
    tool_result_max_chars: int = Field(20_000, ge=200)
    max_request_bytes: int = Field(16 * 1024 * 1024, ge=1024)
    max_messages: int = Field(2000, ge=1)
    max_client_tools: int = Field(512, ge=0)
    max_session_id_chars: int = Field(256, ge=1, description="for X-Session-Id and body session_id alike")
    max_concurrent_calls_per_server: int = Field(16, ge=1)
    request_deadline: float = Field(600.0, gt=0, description="seconds for a whole request, every round included")
    shutdown_grace_seconds: float = Field(30.0, ge=0)
    keep_alive_seconds: float = Field(75.0, gt=0, description="idle client connections stay open this long")
    client_header_timeout: float = Field(10.0, gt=0, description="seconds for a request's headers to arrive")
    client_body_timeout: float = Field(60.0, gt=0, description="seconds for a request's whole body to arrive")
    cors_origins: list[str] = Field(default_factory=list, description="browser origins allowed; none by default")
    api_docs: StrictBool = Field(False, description="serve /openapi.json and /docs")

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    # Set by parse_config: config paths whose `${VAR}` had no value (so errors can name the variable), the values
    # each path got from the environment (MCP `env` secrets), the directory relative paths of stdio servers are
    # resolved against, and what was read but not used (other MCP clients' keys), for one info line.
    unset_env: dict[str, str] = Field(default_factory=dict, exclude=True)
    from_env: dict[str, list[str]] = Field(default_factory=dict, exclude=True)
    base_dir: Path = Field(default_factory=Path.cwd, exclude=True)
    notes: list[str] = Field(default_factory=list, exclude=True)

    def __init__(self, **data: Any) -> None:
        for internal in ("unset_env", "from_env", "base_dir", "notes"):
            if internal in data:
                raise ValueError(f"{internal}: unknown key")
        super().__init__(**data)

    @model_validator(mode="after")
    def _old_store_names(self) -> Config:
        """The store's keys under their old names (in `sessions` and `limits`) still work, each named in a note;
        where both names are set, the new one wins."""
        moves = (
            (self.sessions, "redis_url", "sessions.redis_url", "redis_url"),
            (self.sessions, "store_timeout_ms", "sessions.store_timeout_ms", "timeout_ms"),
            (self.limits, "redis_url", "limits.redis_url", "counters_redis_url"),
        )
        for section, old, shown, new in moves:
            if old not in section.model_fields_set:
                continue
            if new not in self.store.model_fields_set:
                setattr(self.store, new, getattr(section, old))
                self.store.model_fields_set.add(new)
                note = f"{shown} is now store.{new}: read as before; rename it"
            elif getattr(self.store, new) == getattr(section, old):
                note = f"{shown} is now store.{new}: read as before; rename it"  # validated again: moved already
            else:
                note = f"{shown} is ignored: store.{new} is set (its new name)"
            if note not in self.notes:
                self.notes.append(note)
        return self

    @model_validator(mode="after")
    def _references_resolve(self) -> Config:
        if self.default_provider is None and len(self.providers) == 1:
            self.default_provider = next(iter(self.providers))
        problems = reference_problems(
            {
                "providers": self.providers,
                "default_provider": self.default_provider,
                "models": {alias: model.model_dump() for alias, model in self.models.items()},
                "mcpServers": {name: server.model_dump() for name, server in self.mcp_servers.items()},
                "tool_sets": {name: {"servers": tool_set.servers} for name, tool_set in self.tool_sets.items()},
                "tool_hints": self.tool_hints,
                "cors_origins": self.cors_origins,
                "auth": {
                    "api_keys": [
                        entry if isinstance(entry, str) else entry.model_dump() for entry in self.auth.api_keys
                    ]
                },
            }
        )
        if problems:
            raise ValueError("\n".join(problems))
        return self

    def provider_problems(self) -> str | None:
        """Why no provider can serve a chat request, or None when one can. A provider whose key comes from an unset
        `${VAR}` fails every call (as HttpProvider checks), unless it sends each caller's own key instead."""
        if not self.providers:
            return "no provider is configured"
        keyless = {}
        for name, provider in self.providers.items():
            variable = self.unset_env.get(f"providers.{name}.api_key")
            if provider.forward_client_auth or provider.api_key != "" or variable is None:
                return None
            keyless[name] = variable
        unset = "; ".join(f"provider {name!r} has no API key (set {variable})" for name, variable in keyless.items())
        return f"no provider can serve: {unset}"

    def limits_redis_url(self) -> str | None:
        """The Redis that holds the limits' counters: their own, or the one every other store shares."""
        return self.store.counters_redis_url or self.store.redis_url

    def secrets(self) -> set[str]:
        """Every configured secret, for redaction (app.config.secrets decides what counts)."""
        return config_secrets(self)
