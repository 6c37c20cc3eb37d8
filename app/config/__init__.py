"""Configuration: one JSON file, `${VAR}` / `${VAR:-default}` expanded from the environment.

The file format follows what users already have: `mcpServers` is the key Claude Desktop and Cursor use, so a
pasted block works as is. Every problem is reported at once, one line per key, so a bad deploy fails loudly
at start-up instead of at the first request.

The sections live in their own modules; callers import everything from here.
"""

from app.config.discovery import (
    LOAD_RELATED_DEFAULT,
    SEARCH_RESULTS_HARD_CAP,
    AutoDeferConfig,
    EmbeddingEndpointConfig,
    EnrichConfig,
    LearningConfig,
    SemanticConfig,
    ToolDiscoveryConfig,
)
from app.config.env import expand_env
from app.config.loading import ConfigError, config_warnings, load_config, parse_config
from app.config.mcp import (
    ExcludeSpec,
    McpFrontConfig,
    McpLimitsConfig,
    McpServerConfig,
    RunTaskConfig,
    ServerSelection,
    ToolSetConfig,
)
from app.config.providers import ModelConfig, ProviderConfig
from app.config.root import Config
from app.config.secrets import url_secrets
from app.config.service import AuthConfig, ConsoleConfig, ResponsesStoreConfig, SessionConfig, StoreConfig

__all__ = [
    "LOAD_RELATED_DEFAULT",
    "SEARCH_RESULTS_HARD_CAP",
    "AuthConfig",
    "AutoDeferConfig",
    "Config",
    "ConfigError",
    "ConsoleConfig",
    "EmbeddingEndpointConfig",
    "EnrichConfig",
    "ExcludeSpec",
    "LearningConfig",
    "McpFrontConfig",
    "McpLimitsConfig",
    "McpServerConfig",
    "ModelConfig",
    "ProviderConfig",
    "ResponsesStoreConfig",
    "RunTaskConfig",
    "SemanticConfig",
    "ServerSelection",
    "SessionConfig",
    "StoreConfig",
    "ToolDiscoveryConfig",
    "ToolSetConfig",
    "config_warnings",
    "expand_env",
    "load_config",
    "parse_config",
    "url_secrets",
]
