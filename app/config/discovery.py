"""Tool discovery: which tools are deferred, how search_tools answers, and the semantic half of its search."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, StrictBool, field_validator, model_validator

from app.config.base import Strict

SEARCH_RESULTS_HARD_CAP = 25
LOAD_RELATED_DEFAULT = 0  # set by bench/related.py's measurement (see README)


class EmbeddingEndpointConfig(Strict):
    """Any OpenAI-compatible `/v1/embeddings` (OpenAI, Ollama, vLLM, Text Embeddings Inference)."""

    base_url: str
    model: str
    api_key: str | None = None
    batch_size: int = Field(64, ge=1, le=2048)
    max_retries: int = Field(3, ge=0, le=10)


class SemanticConfig(Strict):
    """Hybrid search: an embedding model beside the keyword index; the fusion knobs default to measured values."""

    enabled: Literal["auto"] | StrictBool = "auto"
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
    enrichment_weight: float = Field(
        0.75, ge=0, le=1, description="share of an enriched tool's similarity taken from its enrichment's vector"
    )
    query_tokens_per_request: int = Field(
        1024, ge=0, le=1_000_000, description="query tokens one request may have encoded; past them, keywords alone"
    )
    query_wait_seconds: float = Field(
        5.0, gt=0, le=600, description="longest wait for the query encoder; past it, that search uses keywords alone"
    )

    @model_validator(mode="after")
    def _ordered(self) -> SemanticConfig:
        if self.long_query_words <= self.short_query_words:
            raise ValueError("long_query_words must be larger than short_query_words")
        return self


class EnrichConfig(Strict):
    """Enrichment by a configured model (`toolsift enrich`; with this section, also in the background after the
    gateway starts): per deferred tool, a one-line purpose and a few search phrasings, cached on disk."""

    model: str = Field(description="the model alias (in `models`) that writes each deferred tool's enrichment")
    batch_size: int = Field(15, ge=1, le=50, description="tools asked about in one upstream call")
    max_tokens: int | None = Field(
        None, ge=1, description="tokens (prompts and answers) one run may spend; it stops when they are reached"
    )
    cache_dir: str | None = Field(None, description="where enrichments are cached (default: toolsift's home)")
    background: StrictBool = Field(
        True, description="enrich after start-up and after catalog changes; false: only read what `enrich` cached"
    )


class AutoDeferConfig(Strict):
    """Defer a request's client tools when they are many (clients such as Claude Code send every tool each turn)."""

    min_tokens: int = Field(8000, ge=0, description="client tool tokens above which they are deferred")
    keep: list[str] = Field(default_factory=list, description="client tool names that always stay loaded")


class LearningConfig(Strict):
    """Search that learns from the deployment's own successful calls (docs/discovery.md): `true` or `false`, or
    this object. The ranking knobs default to the values chosen on the tuning intent groups (bench/learning.py)."""

    enabled: StrictBool = True
    threshold: float = Field(0.25, ge=-1, le=1, description="cosine from which a kept query counts as the same need")
    max_lift: float = Field(0.5, ge=0, le=2, description="the most a tool is lifted, as a share of the best score")
    ramp: float = Field(0.1, ge=0, le=1, description="cosine above the threshold at which a kept query lifts fully")
    half_life_days: float = Field(30.0, gt=0, description="a kept query's weight halves in this time without use")
    quorum: int = Field(2, ge=1, le=100, description="other identities needed to lift a tool into a caller's top k")
    max_bytes_per_identity: int = Field(256 * 1024, ge=4096, description="kept pairs per identity, oldest out")
    max_bytes: int = Field(16 * 1024 * 1024, ge=4096, description="kept pairs of the deployment, oldest out")


class ToolDiscoveryConfig(Strict):
    enabled: StrictBool = True
    defer: Literal["auto", "all", "none"] = Field(
        "auto", description="for servers without defer_loading; auto defers them when their tools are large"
    )
    defer_all: StrictBool | None = Field(None, description='the older spelling of defer "all"')
    # bench/cache.py (docs/discovery.md), the prompt cache counted: deferring costs more at 2,961 tokens of tools (30
    # tools: up to 1.18x of every tool loaded) and less at the demo's 4,396 (0.81-0.95x) and from there on.
    auto_defer_min_tokens: int = Field(4000, ge=0, description="o200k tokens of tools above which auto defers")
    max_search_results: int = Field(5, ge=1, le=SEARCH_RESULTS_HARD_CAP)
    manifest_max_tokens: int = Field(1000, ge=100)
    prefetch: int = Field(0, ge=0, le=SEARCH_RESULTS_HARD_CAP)
    prefetch_min_match: float = Field(0.3, ge=0, le=1, description="score / best possible score for the query")
    load_related: int = Field(
        LOAD_RELATED_DEFAULT, ge=0, le=SEARCH_RESULTS_HARD_CAP, description="related tools loaded per found tool"
    )
    client_index_cache_mb: int = Field(
        64, ge=0, description="indexes of callers' deferred tool lists kept, each list indexed once (MiB)"
    )
    semantic: SemanticConfig = Field(default_factory=lambda: SemanticConfig())
    learning: LearningConfig = Field(default_factory=lambda: LearningConfig())
    enrich: EnrichConfig | None = None
    auto_defer_client_tools: AutoDeferConfig | None = None

    @field_validator("learning", mode="before")
    @classmethod
    def _learning_switch(cls, value: Any) -> Any:
        return {"enabled": value} if isinstance(value, bool) else value

    @model_validator(mode="after")
    def _defer_all_is_an_alias(self) -> ToolDiscoveryConfig:
        if self.defer_all:
            if "defer" in self.model_fields_set and self.defer != "all":
                raise ValueError(f'defer_all: true contradicts defer: "{self.defer}"; keep only defer')
            self.defer = "all"
        return self
