"""Configuration: one JSON file, `${VAR}` / `${VAR:-default}` expanded from the environment.

The file format follows what users already have: `mcpServers` is the key Claude Desktop and Cursor use, so a
pasted block works as is. Every problem is reported at once, one line per key, so a bad deploy fails loudly
at start-up instead of at the first request.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import unquote_plus, urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

_ENV_PATTERN = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
SEARCH_RESULTS_HARD_CAP = 25
LOAD_RELATED_DEFAULT = 0  # set by bench/related.py's measurement (see README)
# A URL query parameter whose name contains one of these carries a credential (`?key=`, `?access_token=`, `?sig=`).
_CREDENTIAL_PARAMS = ("key", "token", "secret", "sig", "pass", "auth", "cred", "session", "code")
_AUTH_SCHEMES = frozenset({"bearer", "basic", "token", "bot", "digest"})


class ConfigError(Exception):
    """Raised with every problem found, one human-readable line each."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ProviderConfig(_Strict):
    type: Literal["openai", "anthropic"] = "openai"
    base_url: str = ""
    api_key: str | None = None
    extra_headers: dict[str, str] = Field(default_factory=dict)
    connect_timeout: float = Field(10.0, gt=0)
    read_timeout: float = Field(300.0, gt=0)
    max_retries: int = Field(2, ge=0, le=10)
    retry_base_delay: float = Field(0.5, ge=0)
    retry_max_delay: float = Field(8.0, ge=0)
    deadline: float = Field(120.0, gt=0, description="seconds for all attempts of one call, backoff included")
    forward_client_auth: bool = False
    max_tokens: int = Field(4096, ge=1, description="Anthropic requires max_tokens; used when a request has none")
    max_response_bytes: int = Field(
        4 * 1024 * 1024, ge=1024, description="a larger non-streamed answer (or error body) is a 502, unread"
    )
    anthropic_version: str = "2023-06-01"

    @model_validator(mode="after")
    def _default_base_url(self) -> ProviderConfig:
        if not self.base_url:
            self.base_url = "https://api.anthropic.com/v1" if self.type == "anthropic" else "https://api.openai.com/v1"
        return self


class ModelConfig(_Strict):
    provider: str
    model: str
    params: dict[str, Any] = Field(default_factory=dict)
    fallbacks: list[str] = Field(default_factory=list, description="model aliases tried in order on retryable errors")


class McpServerConfig(BaseModel):
    """A stdio (`command`) or remote (`url`) MCP server.

    Extra keys are tolerated because configs pasted from other MCP clients carry their own (`alwaysAllow`,
    `disabled`, ...); `type` is read as the transport, as Claude Code writes it.
    """

    model_config = ConfigDict(extra="allow")

    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    transport: Literal["stdio", "streamable-http", "http", "sse"] | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    defer_loading: bool | None = Field(None, description="unset: tool_discovery.defer decides")
    always_load: list[str] = Field(
        default_factory=list, description="tools of a deferred server that stay loaded (the server's own names)"
    )
    disabled: bool = False
    description: str | None = None
    startup_timeout: float | None = Field(None, gt=0)
    tool_timeout: float | None = Field(None, gt=0)

    @model_validator(mode="before")
    @classmethod
    def _type_is_transport(cls, data: Any) -> Any:
        if isinstance(data, dict) and "type" in data and "transport" not in data:
            data = {**data, "transport": data["type"]}
            data.pop("type")
        return data

    @model_validator(mode="after")
    def _command_or_url(self) -> McpServerConfig:
        if bool(self.command) == bool(self.url):
            raise ValueError("set exactly one of 'command' (stdio) or 'url' (remote)")
        if self.url and self.transport == "stdio":
            raise ValueError("transport 'stdio' needs 'command', not 'url'")
        if self.command and self.transport not in (None, "stdio"):
            raise ValueError(f"transport {self.transport!r} needs 'url', not 'command'")
        return self

    @property
    def transport_name(self) -> str:
        if self.command:
            return "stdio"
        if self.transport in (None, "http"):
            return "streamable-http"
        return self.transport


class EmbeddingEndpointConfig(_Strict):
    """Any OpenAI-compatible `/v1/embeddings` (OpenAI, Ollama, vLLM, Text Embeddings Inference)."""

    base_url: str
    model: str
    api_key: str | None = None
    batch_size: int = Field(64, ge=1, le=2048)
    max_retries: int = Field(3, ge=0, le=10)


class SemanticConfig(_Strict):
    """Hybrid search: an embedding model beside the keyword index; the fusion knobs default to measured values."""

    enabled: Literal["auto"] | bool = "auto"
    model: str = "sentence-transformers/all-MiniLM-L6-v2"
    endpoint: EmbeddingEndpointConfig | None = None
    cache_dir: str | None = None
    max_tokens: int = Field(128, ge=8, le=512, description="tokens of a query the model reads")
    tool_max_tokens: int = Field(64, ge=8, le=512, description="tokens of a tool's text the model reads")
    weight_short: float = Field(0.8, ge=0, le=1, description="semantic share of the score for short queries")
    weight_long: float = Field(0.2, ge=0, le=1, description="semantic share for long task descriptions")
    short_query_words: int = Field(6, ge=1)
    long_query_words: int = Field(20, ge=2)
    weak_match_floor: float = Field(0.2, ge=-1, le=1, description="cosine below which no weak match is offered")
    lexical_confidence: float = Field(
        0.3, ge=0, le=1, description="short queries: keyword scores divided by at least this share of a full match"
    )
    sentence_weight: float = Field(0.3, ge=0, le=1, description="share of a task's best-matching sentence alone")
    server_meaning_lift: float = Field(0.01, ge=0, le=1, description="lift per std. dev. of a server's nearness")

    @model_validator(mode="after")
    def _ordered(self) -> SemanticConfig:
        if self.long_query_words <= self.short_query_words:
            raise ValueError("long_query_words must be larger than short_query_words")
        return self


class AutoDeferConfig(_Strict):
    """Defer a request's client tools when they are many (clients such as Claude Code send every tool each turn)."""

    min_tokens: int = Field(8000, ge=0, description="client tool tokens above which they are deferred")
    keep: list[str] = Field(default_factory=list, description="client tool names that always stay loaded")


class ToolDiscoveryConfig(_Strict):
    enabled: bool = True
    defer: Literal["auto", "all", "none"] = Field(
        "auto", description="for servers without defer_loading; auto defers them when their tools are large"
    )
    defer_all: bool | None = Field(None, description='the older spelling of defer "all"')
    auto_defer_min_tokens: int = Field(4000, ge=0, description="o200k tokens of tools above which auto defers")
    max_search_results: int = Field(5, ge=1, le=SEARCH_RESULTS_HARD_CAP)
    manifest_max_tokens: int = Field(1000, ge=100)
    prefetch: int = Field(0, ge=0, le=SEARCH_RESULTS_HARD_CAP)
    prefetch_min_match: float = Field(0.3, ge=0, le=1, description="score / best possible score for the query")
    load_related: int = Field(
        LOAD_RELATED_DEFAULT, ge=0, le=SEARCH_RESULTS_HARD_CAP, description="related tools loaded per found tool"
    )
    semantic: SemanticConfig = Field(default_factory=lambda: SemanticConfig())
    auto_defer_client_tools: AutoDeferConfig | None = None

    @model_validator(mode="after")
    def _defer_all_is_an_alias(self) -> ToolDiscoveryConfig:
        if self.defer_all:
            if "defer" in self.model_fields_set and self.defer != "all":
                raise ValueError(f'defer_all: true contradicts defer: "{self.defer}"; keep only defer')
            self.defer = "all"
        return self


class ExcludeSpec(_Strict):
    exclude: list[str]


ServerSelection = bool | list[str] | ExcludeSpec


class ToolSetConfig(_Strict):
    description: str = ""
    servers: dict[str, ServerSelection]


class RunTaskConfig(_Strict):
    """`run_task` on the MCP front: a client hands over a whole task, the gateway's loop runs it."""

    model: str = Field(min_length=1, description="the model (alias or upstream name) that runs the task")
    max_rounds: Annotated[int, Field(ge=1, le=100)] = 10
    deadline_seconds: float = Field(300.0, gt=0)
    system_prompt: str | None = None
    allow_destructive: bool = Field(False, description="run tools a server annotates destructiveHint: true")


class McpFrontConfig(_Strict):
    mode: Literal["lazy", "proxy", "full"] = "lazy"
    max_clients: int = Field(10_000, ge=1, description="lazy clients whose found tools are kept, least recent out")
    run_task: RunTaskConfig | None = None


class AuthConfig(_Strict):
    api_keys: list[str] = Field(default_factory=list)
    admin_keys: list[str] = Field(default_factory=list, description="keys for the console's admin API (/admin/)")


class ConsoleConfig(_Strict):
    """The console page (/console) and the admin API behind it: every tool and recent queries, so without
    gateway keys they are served to loopback connections only."""

    enabled: bool = True
    recent_requests: int = Field(100, ge=0, le=10_000, description="finished requests kept in memory for it")


class SessionConfig(_Strict):
    ttl_seconds: float = Field(3600.0, gt=0)
    max_sessions: int = Field(10_000, ge=1)
    max_bytes: int = Field(16 * 1024 * 1024, ge=4096, description="in-memory store's size bound, oldest out first")
    max_tools: int = Field(256, ge=1, description="tool names remembered per session, the latest kept")
    redis_url: str | None = None


class ResponsesStoreConfig(_Strict):
    """Stored Responses API responses (`store` not false), for `previous_response_id` and GET/DELETE; in Redis
    when `sessions.redis_url` is set."""

    ttl_seconds: float = Field(86_400.0, gt=0)
    max_responses: int = Field(10_000, ge=1)
    max_bytes: int = Field(256 * 1024 * 1024, ge=4096, description="in-memory store's size bound, oldest out first")


class Config(_Strict):
    providers: dict[str, ProviderConfig] = Field(default_factory=dict)
    default_provider: str | None = None
    models: dict[str, ModelConfig] = Field(default_factory=dict)
    mcp_servers: dict[str, McpServerConfig] = Field(default_factory=dict, alias="mcpServers")
    tool_discovery: ToolDiscoveryConfig = Field(default_factory=lambda: ToolDiscoveryConfig())
    tool_sets: dict[str, ToolSetConfig] = Field(default_factory=dict)
    tool_hints: dict[str, dict[str, str]] = Field(default_factory=dict, description="server -> tool -> search text")
    sessions: SessionConfig = Field(default_factory=lambda: SessionConfig())
    responses_store: ResponsesStoreConfig = Field(default_factory=lambda: ResponsesStoreConfig())
    auth: AuthConfig = Field(default_factory=lambda: AuthConfig())
    mcp_front: McpFrontConfig = Field(default_factory=lambda: McpFrontConfig())
    console: ConsoleConfig = Field(default_factory=lambda: ConsoleConfig())
    max_rounds: Annotated[int, Field(ge=1, le=100)] = 10
    tool_cache_ttl: float = Field(300.0, ge=0, description="seconds; 0 refreshes only on list_changed")
    mcp_startup_timeout: float = Field(30.0, gt=0)
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
    api_docs: bool = Field(False, description="serve /openapi.json and /docs")

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    # Set by parse_config: config paths whose `${VAR}` had no value (so errors can name the variable), the values
    # each path got from the environment (MCP `env` secrets), and the directory relative paths of stdio servers are
    # resolved against.
    unset_env: dict[str, str] = Field(default_factory=dict, exclude=True)
    from_env: dict[str, list[str]] = Field(default_factory=dict, exclude=True)
    base_dir: Path = Field(default_factory=Path.cwd, exclude=True)

    def __init__(self, **data: Any) -> None:
        for internal in ("unset_env", "from_env", "base_dir"):
            if internal in data:
                raise ValueError(f"{internal}: unknown key")
        super().__init__(**data)

    @model_validator(mode="after")
    def _references_resolve(self) -> Config:
        problems: list[str] = []
        if self.default_provider is None and len(self.providers) == 1:
            self.default_provider = next(iter(self.providers))
        if self.default_provider is not None and self.default_provider not in self.providers:
            problems.append(
                f"default_provider: {self.default_provider!r} is not one of providers {_names(self.providers)}"
            )
        for alias, model in self.models.items():
            for fallback in model.fallbacks:
                if fallback not in self.models or fallback == alias:
                    problems.append(f"models.{alias}.fallbacks: {fallback!r} is not another model alias")
            if model.provider not in self.providers:
                problems.append(
                    f"models.{alias}.provider: {model.provider!r} is not one of providers {_names(self.providers)}"
                )
        for set_name, tool_set in self.tool_sets.items():
            for server in tool_set.servers:
                if server not in self.mcp_servers:
                    problems.append(
                        f"tool_sets.{set_name}.servers: unknown server {server!r}; "
                        f"servers are {_names(self.mcp_servers)}"
                    )
        for server in self.tool_hints:
            if server not in self.mcp_servers:
                problems.append(f"tool_hints: unknown server {server!r}; servers are {_names(self.mcp_servers)}")
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

    def secrets(self) -> set[str]:
        """Every configured secret, for redaction: upstream and embeddings-endpoint keys, extra header values,
        MCP header values and the `env` values that came from `${VAR}`, gateway keys, and credentials inside
        configured URLs. Literal values (paths, flags, commands) are not secrets."""
        found: set[str] = {*self.auth.api_keys, *self.auth.admin_keys}
        for provider in self.providers.values():
            found.update(_header_secrets(provider.extra_headers))
            if provider.api_key:
                found.add(provider.api_key)
            found.update(url_secrets(provider.base_url))
        for name, server in self.mcp_servers.items():
            found.update(_header_secrets(server.headers))
            found.update(url_secrets(server.url or ""))
            prefix = f"mcpServers.{name}.env."
            for path, values in self.from_env.items():
                if path.startswith(prefix):
                    found.update(values)
                    found.add(server.env.get(path.removeprefix(prefix), ""))
        found.update(url_secrets(self.sessions.redis_url or ""))
        endpoint = self.tool_discovery.semantic.endpoint
        if endpoint is not None:
            found.update({endpoint.api_key or "", *url_secrets(endpoint.base_url)})
        found.discard("")
        return found


def _header_secrets(headers: dict[str, str]) -> set[str]:
    """Header values, and the credential alone when a value is `<scheme> <credential>` (an upstream that echoes
    the token without its `Bearer` still gets it redacted). A bare scheme (`Bearer ` from an unset variable) is
    not a secret."""
    found: set[str] = set()
    for value in headers.values():
        scheme, _, credential = value.strip().partition(" ")
        if credential.strip() and scheme.isalpha():
            found.update({value.strip(), credential.strip()})
        elif scheme.lower() not in _AUTH_SCHEMES:
            found.add(value.strip())
    return found


def url_secrets(url: str) -> set[str]:
    """The password (or a lone user name, as token URLs use it) and credential-named query values of a URL, as
    written and percent-decoded (a text may quote either)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return set()
    userinfo, at, _ = parts.netloc.rpartition("@")
    user, colon, password = userinfo.partition(":")
    raw = [password if colon else user] if at else []
    for pair in parts.query.split("&"):
        name, _, value = pair.partition("=")
        if any(marker in unquote_plus(name).lower() for marker in _CREDENTIAL_PARAMS):
            raw.append(value)
    return {form for value in raw for form in (value, unquote_plus(value)) if form}


def _names(mapping: dict[str, Any]) -> str:
    return ", ".join(sorted(mapping)) or "(none)"


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
    return part in {"bool", "ExcludeSpec"} or part.startswith("list[")
