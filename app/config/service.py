"""What the gateway keeps for its callers: their keys, the console, and the session and response stores."""

from __future__ import annotations

from pydantic import Field, StrictBool

from app.config.base import Strict

PER_IDENTITY = "one caller's share of the in-memory store (none: the whole store); over it, its oldest go first"


class AuthConfig(Strict):
    api_keys: list[str] = Field(default_factory=list)
    admin_keys: list[str] = Field(default_factory=list, description="keys for the console's admin API (/admin/)")


class ConsoleConfig(Strict):
    """The console page (/console) and the admin API behind it: every tool and recent queries, so without
    gateway keys they are served to loopback connections only."""

    enabled: StrictBool = True
    recent_requests: int = Field(100, ge=0, le=10_000, description="finished requests kept in memory for it")


class SessionConfig(Strict):
    ttl_seconds: float = Field(3600.0, gt=0)
    max_sessions: int = Field(10_000, ge=1)
    max_bytes: int = Field(16 * 1024 * 1024, ge=4096, description="in-memory store's size bound, oldest out first")
    max_bytes_per_identity: int | None = Field(None, ge=4096, description=PER_IDENTITY)
    max_tools: int = Field(256, ge=1, description="tool names remembered per session, the latest kept")
    redis_url: str | None = None


class ResponsesStoreConfig(Strict):
    """Stored Responses API responses (`store` not false), for `previous_response_id` and GET/DELETE; in Redis
    when `sessions.redis_url` is set."""

    ttl_seconds: float = Field(86_400.0, gt=0)
    max_responses: int = Field(10_000, ge=1)
    max_bytes: int = Field(256 * 1024 * 1024, ge=4096, description="in-memory store's size bound, oldest out first")
    max_bytes_per_identity: int | None = Field(None, ge=4096, description=PER_IDENTITY)
