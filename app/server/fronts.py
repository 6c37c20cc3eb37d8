"""The fronts the gateway serves: each is a folder under app/fronts/ whose routes module declares it (its prefix,
error shape and routes); its line here mounts it."""

from __future__ import annotations

from app.fronts.chat import routes as chat
from app.fronts.mcp import routes as mcp
from app.fronts.messages import routes as messages
from app.fronts.responses import routes as responses
from app.fronts.routing import FrontSpec

FRONTS: tuple[FrontSpec, ...] = (
    chat.FRONT,
    responses.FRONT,
    messages.FRONT,
    mcp.FRONT,
)
