"""What the gateway keeps for its callers: their keys, the console, and the session and response stores."""

from __future__ import annotations

from pydantic import Field, StrictBool, model_validator

from app.config.base import Strict
from app.config.identities import ApiKey, IdentityConfig, identity_problems, key_of

PER_IDENTITY = "one caller's share of the store, in memory or in Redis (none: no share); over it, its oldest go first"


class AuthConfig(Strict):
    api_keys: list[ApiKey] = Field(
        default_factory=list, description="gateway keys: a string, or an identity object (app/config/identities.py)"
    )
    admin_keys: list[str] = Field(default_factory=list, description="keys for the console's admin API (/admin/)")

    @model_validator(mode="after")
    def _one_identity_per_key(self) -> AuthConfig:
        problems = identity_problems(self.api_keys)
        if problems:
            raise ValueError("\n".join(problems))
        return self

    def gateway_keys(self) -> list[str]:
        """Every gateway key, as the edge compares them."""
        return [key for key in map(key_of, self.api_keys) if key]

    def identities(self) -> list[IdentityConfig]:
        """The named identities, in config order."""
        return [entry for entry in self.api_keys if isinstance(entry, IdentityConfig)]


class ConsoleConfig(Strict):
    """The console page (/console) and the admin API behind it: every tool and recent queries, so without
    gateway keys they are served to loopback connections only."""

    enabled: StrictBool = True
    recent_requests: int = Field(100, ge=0, le=10_000, description="finished requests kept in memory for it")


class StoreConfig(Strict):
    """Where callers' state lives (sessions, stored responses, kept rounds, MCP clients' tools, limits' counters):
    this process's memory, or a Redis every replica and worker shares. One client per Redis per process."""

    redis_url: str | None = Field(None, description="e.g. redis://redis:6379/0; default: in memory")
    timeout_ms: int = Field(
        250, ge=1, le=60_000, description="longest wait for one Redis operation; past it the store counts as down"
    )
    counters_redis_url: str | None = Field(
        None, description="a Redis of the limits' counters alone (it must not evict them); default: redis_url"
    )


class SessionConfig(Strict):
    ttl_seconds: float = Field(3600.0, gt=0)
    max_sessions: int = Field(10_000, ge=1)
    max_bytes: int = Field(16 * 1024 * 1024, ge=4096, description="in-memory store's size bound, oldest out first")
    max_bytes_per_identity: int | None = Field(None, ge=4096, description=PER_IDENTITY)
    max_tools: int = Field(256, ge=1, description="tool names remembered per session, the latest kept")
    redis_url: str | None = Field(None, description="read as store.redis_url (its old name)")
    store_timeout_ms: int = Field(250, ge=1, le=60_000, description="read as store.timeout_ms (its old name)")


class ResponsesStoreConfig(Strict):
    """Stored Responses API responses (`store` not false), for `previous_response_id` and GET/DELETE; in Redis
    when `store.redis_url` is set."""

    ttl_seconds: float = Field(86_400.0, gt=0)
    max_responses: int = Field(10_000, ge=1)
    max_bytes: int = Field(256 * 1024 * 1024, ge=4096, description="in-memory store's size bound, oldest out first")
    max_bytes_per_identity: int | None = Field(None, ge=4096, description=PER_IDENTITY)
