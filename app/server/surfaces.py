"""The parts of the gateway's URL space, each a front or the gateway's own (models, console, admin, operations):
its path prefix and the error shape of its front, so every refusal the edge answers itself is read by the
caller's SDK. The route table (app/server/routes.py) files each path under one of these.
"""

from __future__ import annotations

from app.fronts.chat_completions import ChatCompletionsFront
from app.fronts.mcp.server import McpFront
from app.fronts.messages import MessagesFront
from app.fronts.responses import ResponsesFront
from app.fronts.shapes import OPENAI, ErrorShape
from app.server.shapes import ErrorShapes, Surface

# Each front's surface takes the error shape the front carries.
CHAT = Surface("chat_completions", "/v1/chat/completions", ChatCompletionsFront.shape)
RESPONSES = Surface("responses", "/v1/responses", ResponsesFront.shape)
MESSAGES = Surface("messages", "/v1/messages", MessagesFront.shape)
MCP = Surface("mcp", "/mcp", McpFront.shape)
MODELS = Surface("models", "/v1/models", OPENAI)
# The operator's: loopback-only without admin keys, whose checks are their own (every path under them alike).
CONSOLE = Surface("console", "/console", OPENAI, operator=True)
ADMIN = Surface("admin", "/admin", OPENAI, operator=True)
GATEWAY = Surface("gateway", "", OPENAI)  # operations (health, readiness, metrics, docs); any other path

SURFACES = (CHAT, RESPONSES, MESSAGES, MCP, MODELS, CONSOLE, ADMIN, GATEWAY)
SHAPES = ErrorShapes(list(SURFACES), OPENAI)
OPERATOR_PREFIXES = tuple(sorted(surface.prefix for surface in SURFACES if surface.operator))


def shape_for(path: str) -> ErrorShape:
    """The error shape of the front `path` is addressed to."""
    return SHAPES.for_path(path)
