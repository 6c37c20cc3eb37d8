"""The manifest: a compact list of deferred servers and tools, carried in `search_tools`' description.

The model cannot search for what it does not know exists, so it sees every deferred server with its tool
count, tool names (the first few for large servers) and a one-line summary: enough to pick a query or to ask
for exact names, at a fraction of the full definitions' tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from app.catalog import SEARCH_TOOL_NAME, ToolEntry

LIST_ALL_NAMES_UP_TO = 10
NAMES_SHOWN_WHEN_LARGE = 5


@dataclass(frozen=True, slots=True)
class ManifestGroup:
    """A deferred server, or the client's deferred tools under a label of their own."""

    label: str
    summary: str
    tools: Sequence[ToolEntry]


def manifest_text(groups: Sequence[ManifestGroup]) -> str:
    lines: list[str] = []
    for group in groups:
        names = [entry.original_name for entry in group.tools]
        if len(names) > LIST_ALL_NAMES_UP_TO:
            shown = ", ".join(names[:NAMES_SHOWN_WHEN_LARGE]) + f", ... and {len(names) - NAMES_SHOWN_WHEN_LARGE} more"
        else:
            shown = ", ".join(names)
        noun = "tool" if len(names) == 1 else "tools"
        lines.append(f"- {group.label} ({len(names)} {noun}): {shown}")
        if group.summary:
            lines.append(f"  {group.summary}")
    return "\n".join(lines)


def search_tool_definition(groups: Sequence[ManifestGroup]) -> dict[str, Any]:
    description = (
        "Search for and load tool definitions that are not loaded yet. Call this before using any tool listed "
        "below; found tools become callable right after, as server__tool (e.g. "
        f"{_example_name(groups)}). Prefer tool_names when you know the names from this list.\n\n"
        f"<manifest>\n{manifest_text(groups)}\n</manifest>"
    )
    return {
        "type": "function",
        "function": {
            "name": SEARCH_TOOL_NAME,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {
                        "type": "string",
                        "description": (
                            "Keywords for the capability you need, e.g. 'create calendar event'. "
                            "'+word' requires a word; 'select:a,b' loads tools by name."
                        ),
                    },
                    "server_name": {
                        "type": "string",
                        "description": "Only search this server; alone, loads all of its tools.",
                    },
                    "tool_names": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "Load these tools by name (as listed, or as server__tool).",
                    },
                },
            },
        },
    }


def _example_name(groups: Sequence[ManifestGroup]) -> str:
    for group in groups:
        for entry in group.tools:
            return entry.name
    return "server__tool"
