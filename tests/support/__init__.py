"""Helpers the tests share, by topic; the commonly used ones are importable from here.

gateway: the config, example servers, request bodies, `toolsift serve` in a process. upstream: the in-memory
OpenAI-compatible upstream and SSE. scripted: a scripted upstream served by uvicorn. anthropic: Anthropic's
Messages API as an upstream. raw: a raw-bytes loopback upstream. mcp: the MCP front's clients and changing servers.
browser: the console in a headless Chromium.
"""

from tests.support.gateway import (
    ROOT,
    SERVERS,
    UPSTREAM,
    GatewayFactory,
    chat_body,
    engine_request,
    example_server,
    example_targets,
    gateway_config,
    load_example,
    make_config,
    served_gateway,
)
from tests.support.scripted import ScriptedUpstream, free_port
from tests.support.upstream import (
    FIRST_CHUNK,
    Upstream,
    completion,
    content_of,
    events,
    finish_reasons,
    mock_upstreams,
    sse_reply,
)

__all__ = [
    "FIRST_CHUNK",
    "ROOT",
    "SERVERS",
    "UPSTREAM",
    "GatewayFactory",
    "ScriptedUpstream",
    "Upstream",
    "chat_body",
    "completion",
    "content_of",
    "engine_request",
    "events",
    "example_server",
    "example_targets",
    "finish_reasons",
    "free_port",
    "gateway_config",
    "load_example",
    "make_config",
    "mock_upstreams",
    "served_gateway",
    "sse_reply",
]
