"""The registry that picks a front's error shape by path: every refusal the edge answers itself (a foreign origin,
a missing key, an unknown path, a slow client) is rendered by the shape the front it was addressed to carries
(app/fronts/shapes.py), so a client's SDK can read it.

A front's own errors (a bad request body, an upstream failure) are the front's to render; these are the ones
answered before any front runs, and the engine's refusals (an identity's tool set, models, limits) where the edge
answers them itself (the MCP front).
"""

from __future__ import annotations

from dataclasses import dataclass

from app.fronts.shapes import ErrorShape


@dataclass(frozen=True)
class Surface:
    """A front as the edge sees it: the path prefix it answers under and its error shape."""

    name: str
    prefix: str
    shape: ErrorShape
    operator: bool = False  # the operator's (console, admin API): every path under it guarded alike


class ErrorShapes:
    """Path prefix -> error shape: the longest prefix that names the path (the path itself or a parent of it)
    wins; paths under no front's prefix get `default`'s."""

    def __init__(self, surfaces: list[Surface], default: ErrorShape) -> None:
        self.surfaces = sorted({surface.prefix: surface for surface in surfaces}.values(), key=_longest_first)
        self.default = default

    def for_path(self, path: str) -> ErrorShape:
        for surface in self.surfaces:
            if path == surface.prefix or path.startswith(surface.prefix + "/"):
                return surface.shape
        return self.default


def _longest_first(surface: Surface) -> int:
    return -len(surface.prefix)
