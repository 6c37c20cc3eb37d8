"""Hosted tools (web search, code interpreter, ...), which the upstream runs itself, not the client or the gateway.

A provider that can pass some to its upstream says which (`hosted_tools`, by type); the others are left out of
the upstream call, with a log line and `tool_discovery.hosted_tools_dropped`, so a client that always sends one
(Codex CLI sends `web_search`) still works, and knows the tool was not there. A provider configured with
`unsupported_hosted_tools: "refuse"` answers such a request with a 400 naming the tool instead.
"""

from __future__ import annotations

import logging

from app.common.errors import GatewayError
from app.config import Config
from app.core.model import ChatRequest, HostedTool
from app.providers.base import Provider

log = logging.getLogger("toolsift.tools")


def hosted_tools(request: ChatRequest, provider: Provider, config: Config) -> tuple[list[HostedTool], tuple[str, ...]]:
    """The request's hosted tools the provider serves, and the types of those it leaves out (or a 400)."""
    if not request.hosted_tools:
        return [], ()
    served: frozenset[str] = getattr(provider, "hosted_tools", frozenset())
    kept = [tool for tool in request.hosted_tools if tool.type in served]
    missing = [tool for tool in request.hosted_tools if tool.type not in served]
    if not missing:
        return kept, ()
    settings = config.providers.get(provider.name)
    if settings is not None and settings.unsupported_hosted_tools == "refuse":
        first = missing[0]
        raise GatewayError(
            400, f"The hosted tool '{first.type}' is not supported by this gateway's provider '{provider.name}', "
            "which cannot run it (unsupported_hosted_tools: refuse). Remove it from 'tools'.",
            param=f"{first.where}.type" if first.where else "tools", code="unsupported_tool",
        )  # fmt: skip
    dropped = tuple(dict.fromkeys(tool.type for tool in missing))
    log.info("hosted tools left out: provider %s cannot run %s", provider.name, ", ".join(dropped))
    return kept, dropped
