"""The `limits` section: how identities' limits are counted, beside the limits themselves (in each identity)."""

from __future__ import annotations

from pydantic import Field

from app.config.base import Strict


class LimitsConfig(Strict):
    default_output_tokens: int = Field(
        1024, ge=1, description="the answer's tokens reserved against tokens_per_day when a request sets no max_tokens"
    )
    redis_url: str | None = Field(None, description="read as store.counters_redis_url (its old name)")
