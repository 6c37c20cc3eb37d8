"""The manifest: a compact list of deferred servers and tools, carried in `search_tools`' description.

The model cannot search for what it does not know exists, so it sees every deferred server with its tool
count, tool names and a one-line summary: enough to pick a query or to ask for exact names, at a fraction of
the full definitions' tokens. A token budget keeps it bounded at thousands of tools: detail is shed step by
step (fewer names, most distinctive first; shorter summaries; then names and counts only), so small setups
still list every tool.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from app.common import tokens
from app.core.catalog import SEARCH_TOOL_NAME, ToolEntry

DEFAULT_MAX_TOKENS = 1000


@dataclass(frozen=True, slots=True)
class ManifestGroup:
    """A deferred server, or the client's deferred tools under a label of their own."""

    label: str
    summary: str
    tools: Sequence[ToolEntry]
    loaded: Sequence[ToolEntry] = ()  # the server's tools that stay loaded (always_load, alwaysLoad)


@dataclass(frozen=True, slots=True)
class Detail:
    """How much of each server one rendering shows."""

    names: int | None  # tool names per server (None: all of them)
    summary_chars: int | None  # summary length (None: whole; 0: none)


# From most to least detailed; the first that fits the token budget wins. Small setups fit the first.
DETAILS = (
    Detail(None, None),
    Detail(5, None),
    Detail(3, 80),
    Detail(0, 60),
    Detail(0, 0),
)


def manifest_text(
    groups: Sequence[ManifestGroup],
    max_tokens: int = DEFAULT_MAX_TOKENS,
    distinctiveness: Callable[[ToolEntry], float] | None = None,
) -> str:
    """The most detailed manifest within `max_tokens`: names ordered most distinctive first when shortened."""
    ordered = [_by_distinctiveness(group, distinctiveness) for group in groups]
    for detail in DETAILS:
        text = "\n".join(_render(group, shortened, detail) for group, shortened in zip(groups, ordered, strict=True))
        # A token is rarely more than 8 characters, so much longer text cannot fit: skip the exact count.
        if len(text) <= max_tokens * 8 and tokens.count_text(text) <= max_tokens:
            return text
    return _fit_servers(groups, max_tokens)


def _by_distinctiveness(group: ManifestGroup, distinctiveness: Callable[[ToolEntry], float] | None) -> list[str]:
    entries = list(group.tools)
    if distinctiveness is not None:
        entries.sort(key=distinctiveness, reverse=True)
    return [entry.original_name for entry in entries]


def _render(group: ManifestGroup, shortened: list[str], detail: Detail) -> str:
    count = len(group.tools)
    head = f"- {group.label} ({count} tool{'' if count == 1 else 's'})"
    if detail.names is None:
        head += ": " + ", ".join(entry.original_name for entry in group.tools)
    elif detail.names > 0:
        shown = shortened[: detail.names]
        rest = count - len(shown)
        head += ": " + ", ".join(shown) + (f", ... and {rest} more" if rest else "")
    if group.loaded and detail.names != 0:
        head += f"; loaded already, call directly: {', '.join(entry.name for entry in group.loaded)}"
    summary = group.summary
    if detail.summary_chars == 0 or not summary:
        return head
    if detail.summary_chars is not None and len(summary) > detail.summary_chars:
        summary = summary[: detail.summary_chars - 3].rstrip() + "..."
    return f"{head}\n  {summary}"


def _fit_servers(groups: Sequence[ManifestGroup], max_tokens: int) -> str:
    """Past every detail level: as many servers (name and count) as fit, then how many more there are."""
    lines: list[str] = []
    used = 0
    for index, group in enumerate(groups):
        line = f"- {group.label} ({len(group.tools)})"
        cost = tokens.count_text(line) + 1
        remaining = len(groups) - index
        if used + cost + 20 > max_tokens:
            lines.append(f"... and {remaining} more servers: search by keyword to reach their tools")
            break
        lines.append(line)
        used += cost
    return "\n".join(lines)


CALLABLE_AFTER = "found tools become callable right after, as server__tool"


def search_tool_definition(
    groups: Sequence[ManifestGroup], manifest: str, callable_after: str = CALLABLE_AFTER, note: str = ""
) -> dict[str, Any]:
    """`search_tools` as the model sees it, with `manifest` (from `manifest_text`) in its description.
    `callable_after` says how found tools are then called (the MCP front's proxy mode runs them with
    `call_tool`); `note` is added before the manifest."""
    note = f" {note}" if note else ""
    description = (
        "Search for and load tool definitions that are not loaded yet. Call this before using any tool listed "
        f"below; {callable_after} (e.g. "
        f"{_example_name(groups)}). Prefer tool_names when you know the names from this list. For several "
        f"capabilities, send one short query each in 'queries', in one call.{note}\n\n"
        f"<manifest>\n{manifest}\n</manifest>"
    )
    return {
        "type": "function",
        "function": {
            "name": SEARCH_TOOL_NAME,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {
                    "queries": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": (
                            "One short query per capability, e.g. ['stock price history', 'create presentation']; "
                            "each gets its own results."
                        ),
                    },
                    "query": {
                        "type": "string",
                        "description": (
                            "Keywords for one capability, e.g. 'create calendar event'. "
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
