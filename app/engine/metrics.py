"""The gateway's counters and latency histograms, fed from what each request's events recorded.

Each gateway owns its registry, so several gateways in one process (tests, embedding) never share counters.
They live with the engine, which owns them (and times MCP calls into them); the server edge feeds the per-request
ones and renders them in Prometheus's text format at `/metrics` (app/server/observability.py).
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter("toolsift_requests", "Chat requests by HTTP status", ["status", "stream"], registry=r)
        # Labelled by identity ids from the config (names, `key-` ids, `anonymous`): as many series as keys.
        self.identity_requests = Counter(
            "toolsift_identity_requests", "Requests by identity and HTTP status", ["identity", "status"], registry=r
        )
        self.identity_tokens = Counter(
            "toolsift_identity_tokens", "Upstream tokens by identity", ["identity"], registry=r
        )
        # The upstream's prompt cache, as it reported it: tokens read from it (billed at about 0.1x) and written
        # to it (Anthropic's 1.25x), both also counted in the identity's tokens.
        self.cached_tokens = Counter(
            "toolsift_upstream_cached_tokens",
            "Prompt tokens the upstream read from its cache",
            ["identity"],
            registry=r,
        )
        self.cache_write_tokens = Counter(
            "toolsift_upstream_cache_write_tokens",
            "Prompt tokens the upstream wrote to its cache",
            ["identity"],
            registry=r,
        )
        self.limited = Counter(
            "toolsift_limit_refusals", "Requests refused by an identity's limit", ["identity", "limit"], registry=r
        )
        self.limits_unavailable = Counter(
            "toolsift_limits_unavailable", "Limit checks that failed open: the limits' store did not answer", registry=r
        )
        self.rounds = Counter("toolsift_rounds", "Upstream rounds", registry=r)
        self.searches = Counter("toolsift_search_calls", "search_tools calls answered", registry=r)
        self.discovered = Counter("toolsift_tools_discovered", "Tools loaded by search_tools", registry=r)
        self.prefetched = Counter("toolsift_tools_prefetched", "Tools loaded by prefetch", registry=r)
        self.tokens_saved = Counter(
            "toolsift_tool_tokens_saved", "Estimated tool-definition tokens not sent upstream", registry=r
        )
        self.cache_hits_lost = Counter(
            "toolsift_cache_hits_lost",
            "Estimated prompt tokens the upstream could have read from its cache had discovery not changed the tools",
            registry=r,
        )
        self.mcp_calls = Histogram(
            "toolsift_mcp_call_seconds", "MCP tool call latency", ["server"], buckets=LATENCY_BUCKETS, registry=r
        )
        self.mcp_errors = Counter("toolsift_mcp_errors", "MCP tool calls that failed", ["server"], registry=r)
        # What MCP servers said beside their answers (log messages, stderr) past the log's budget for them.
        self.mcp_dropped = Counter(
            "toolsift_mcp_output_dropped",
            "MCP server output not logged: log_messages, stderr_lines, stderr_bytes",
            ["server", "kind"],
            registry=r,
        )
        self.upstream = Histogram(
            "toolsift_upstream_seconds", "Upstream time per request", ["provider"], buckets=LATENCY_BUCKETS, registry=r
        )

    def record_mcp_dropped(self, server: str, kind: str, count: int) -> None:
        self.mcp_dropped.labels(server, kind).inc(count)

    def record_mcp_call(self, server: str, seconds: float, failed: bool) -> None:
        self.mcp_calls.labels(server).observe(seconds)
        if failed:
            self.mcp_errors.labels(server).inc()
