"""Who is calling the MCP front. What each client enabled is the engine's to keep (app/engine/mcp_clients.py).

A client is a caller's identity in one MCP session (handshake-era protocols), or the identity alone (2026-07-28,
which has no sessions). The identity comes from the access token the server edge's key verifier issued (its
`client_id` is the identity's id, never the key); without gateway keys every caller is the anonymous identity.
"""

from __future__ import annotations

from fastmcp.server.dependencies import get_access_token, get_context
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from app.common.identity import ANONYMOUS, Identities, Identity
from app.core.catalog import ToolScope, scope_label


def calling_client(tool_set: ToolScope, identities: Identities) -> tuple[Identity, str]:
    """The caller's identity (with what the config allows it), and the client's id within it: the served tool
    set and, on handshake-era connections, the MCP session id."""
    token = get_access_token()
    identity = identities.get(token.client_id) if token is not None and token.client_id else ANONYMOUS
    session = ""
    context = get_context()
    request = context.request_context
    if request is None or request.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        try:
            session = context.session_id or ""
        except RuntimeError:
            session = ""
    return identity, f"{scope_label(tool_set)}/{session}"
