"""What an identity may reach: its models and its tool set, checked at the engine's entry so every front (the
MCP front's `run_task` included) refuses alike, each in its own error shape.

A request's `tool_set` narrows the identity's: the request gets the tools both allow. Asking for a tool set
that shares no tool with the identity's own is refused (403) rather than answered with no tools, so the caller
learns its request cannot be served instead of a model silently working without tools.
"""

from __future__ import annotations

from app.common.errors import GatewayError
from app.common.identity import Identity
from app.config import Config
from app.core.catalog import Catalog, ToolScope, narrowed, select_mcp_tools


def check_model(identity: Identity, model: str) -> None:
    if not identity.allows_model(model):
        allowed = ", ".join(sorted(identity.models or ())) or "none"
        raise GatewayError(
            403,
            f"The model {model!r} is not allowed for this key (identity {identity.id!r}). Its models: {allowed}.",
            param="model",
            code="model_not_allowed",
        )


def tool_scope(identity: Identity, asked: str | None, catalog: Catalog, config: Config) -> ToolScope:
    """The tools `identity` may see when it asks for tool set `asked`; an unknown `asked` is refused (400) as
    before, one that shares no tool with the identity's own is a 403."""
    scope = narrowed(identity.tool_set, asked)
    own = identity.tool_set
    if isinstance(scope, tuple) and own is not None and _share_nothing(catalog, config, scope, own):
        raise GatewayError(
            403,
            f"tool_set {asked!r} shares no tool with this key's tool set {own!r}: a request can narrow its key's "
            "tools, never widen them.",
            param="tool_set",
            code="tool_set_not_allowed",
        )
    return scope


def _share_nothing(catalog: Catalog, config: Config, scope: ToolScope, own: str) -> bool:
    """No tool in `scope` while the identity's own set lists some (its servers may still be starting)."""
    return not select_mcp_tools(catalog, config, scope) and bool(select_mcp_tools(catalog, config, own))
