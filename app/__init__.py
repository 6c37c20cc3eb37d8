"""toolsift: an OpenAI-compatible gateway that defers MCP tools behind search_tools."""

from __future__ import annotations

from importlib import metadata


def toolsift_version() -> str:
    """The installed package's version (a source tree run without installing has none to report)."""
    try:
        return metadata.version("toolsift")
    except metadata.PackageNotFoundError:
        return "0+unknown"
