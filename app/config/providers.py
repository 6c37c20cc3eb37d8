"""Upstream providers and the model aliases routed to them."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, StrictBool, model_validator

from app.config.base import Strict

# An OpenAI-compatible upstream's default deferral, the cheaper one on bench/cache.py's traces (docs/discovery.md).
CHAT_DEFERRAL: Literal["native", "tools", "call_tool"] = "call_tool"


class ProviderConfig(Strict):
    type: Literal["openai", "anthropic", "openai_responses"] = "openai"
    base_url: str = ""
    api_key: str | None = None
    extra_headers: dict[str, str] = Field(default_factory=dict)
    connect_timeout: float = Field(10.0, gt=0)
    read_timeout: float = Field(300.0, gt=0)
    max_retries: int = Field(2, ge=0, le=10)
    retry_base_delay: float = Field(0.5, ge=0)
    retry_max_delay: float = Field(8.0, ge=0)
    deadline: float = Field(120.0, gt=0, description="seconds for all attempts of one call, backoff included")
    forward_client_auth: StrictBool = False
    max_tokens: int = Field(4096, ge=1, description="Anthropic requires max_tokens; used when a request has none")
    # Streams count their SSE framing too (about 200 bytes a token): 32 MiB carries some 150,000 streamed tokens.
    max_response_bytes: int = Field(
        32 * 1024 * 1024, ge=1024, description="a larger answer or error body is a 502; a stream ends with an error"
    )
    stream_usage: StrictBool = Field(
        True,
        description="ask an OpenAI-compatible upstream for usage at the end of every stream "
        "(stream_options.include_usage); false for one that refuses the option: its streams are then counted with "
        "the gateway's own tokenizer",
    )
    anthropic_version: str = "2023-06-01"
    prompt_cache: Literal["auto", "off"] = Field(
        "auto",
        description="anthropic only: auto places cache breakpoints (tools, system, last turn) where a client set none",
    )
    deferral: Literal["native", "tools", "call_tool"] | None = Field(
        None,
        description="how found tools reach this upstream: through the provider's own deferral (native: "
        "`defer_loading` and `tool_reference`, or Responses `tool_search_output`), added to `tools` (tools), or run "
        "through one fixed `call_tool` tool (call_tool); native and call_tool keep the tool list, and so the prompt "
        "cache, the same for the whole conversation. Default: native for anthropic and openai_responses, "
        f"{CHAT_DEFERRAL} for openai (native there is for hosts that take `defer_loading` and `tool_reference`)",
    )
    unsupported_hosted_tools: Literal["drop", "refuse"] = Field(
        "drop",
        description="hosted tools (web_search, ...) this upstream cannot run: left out of its calls (drop), or a 400",
    )

    @model_validator(mode="after")
    def _default_base_url(self) -> ProviderConfig:
        if self.deferral is None:
            self.deferral = CHAT_DEFERRAL if self.type == "openai" else "native"
        if not self.base_url:
            self.base_url = "https://api.anthropic.com/v1" if self.type == "anthropic" else "https://api.openai.com/v1"
        return self


class ModelConfig(Strict):
    provider: str
    model: str
    params: dict[str, Any] = Field(default_factory=dict)
    fallbacks: list[str] = Field(default_factory=list, description="model aliases tried in order on retryable errors")
