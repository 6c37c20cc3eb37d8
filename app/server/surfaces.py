"""The parts of the gateway's URL space, each a front or the gateway's own (models, console, admin, operations):
its path prefix and error shape, so every refusal the edge answers itself is read by the caller's SDK. The
fronts' come from their declarations (app/server/fronts.py); the route table (app/server/routes.py) files each of
the gateway's own paths under one of these.
"""

from __future__ import annotations

from app.fronts.shapes import OPENAI, ErrorShape
from app.server.fronts import FRONTS
from app.server.shapes import ErrorShapes, Surface

MODELS = Surface("models", "/v1/models", OPENAI)
# The operator's: loopback-only without admin keys, whose checks are their own (every path under them alike).
CONSOLE = Surface("console", "/console", OPENAI, operator=True)
ADMIN = Surface("admin", "/admin", OPENAI, operator=True)
GATEWAY = Surface("gateway", "", OPENAI)  # operations (health, readiness, metrics, docs); any other path

FRONT_SURFACES = tuple(Surface(front.name, front.prefix, front.shape) for front in FRONTS)
SURFACES = (*FRONT_SURFACES, MODELS, CONSOLE, ADMIN, GATEWAY)
SHAPES = ErrorShapes(list(SURFACES), OPENAI)
OPERATOR_PREFIXES = tuple(sorted(surface.prefix for surface in SURFACES if surface.operator))


def shape_for(path: str) -> ErrorShape:
    """The error shape of the front `path` is addressed to."""
    return SHAPES.for_path(path)
