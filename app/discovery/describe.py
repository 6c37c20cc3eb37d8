"""How found tools read in a `search_tools` result: name, origin, first paragraph, parameters in one line."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from app.core.catalog import ToolEntry

LOADED_NOTE = "These tools are now loaded and available to call."
MAX_NAME_CHARS = 128


def shown_name(name: str) -> str:
    """A name (or query) as quoted back in a result: anyone can send a megabyte of one."""
    return name if len(name) <= MAX_NAME_CHARS else name[:MAX_NAME_CHARS] + "..."


def describe(
    entries: Sequence[ToolEntry],
    is_loaded: Callable[[str], bool],
    loaded_note: str = LOADED_NOTE,
    marks: Mapping[str, str] | None = None,
    purpose: str = "",
    brief: bool = False,
) -> str:
    """`marks` adds a word on a tool's line (which queries found it); `purpose` ends the heading; `brief` names the
    tools in one line, for a caller that gets their whole definitions another way (loaded by reference, or listed
    after): every token of a result is paid again, from the cache, in each later call of the conversation."""
    any_new = any(not is_loaded(entry.name) for entry in entries)
    closing = loaded_note if any_new else "These tools were already loaded."
    heading = f"Found {len(entries)} tool{'s' if len(entries) != 1 else ''}{purpose}:"
    if brief:  # an MCP tool's name says its server
        named = [entry.name + _about(entry, is_loaded(entry.name), (marks or {}).get(entry.name)) for entry in entries]
        return f"{heading} {', '.join(named)}.\n{closing}"
    lines = [heading, ""]
    for entry in entries:
        origin = f"server: {entry.server}" if entry.server else "client tool"
        status = "; already loaded" if is_loaded(entry.name) else ""
        mark = f"; {marks[entry.name]}" if marks and entry.name in marks else ""
        lines.append(f"- {entry.name} ({origin}{status}{mark})")
        if entry.description:
            lines.append(f"  {_first_paragraph(entry.description)}")
        lines.append(f"  Parameters: {parameter_summary(entry.parameters)}")
        lines.append("")
    lines.append(closing)
    return "\n".join(lines)


def _about(entry: ToolEntry, loaded: bool, mark: str | None) -> str:
    parts = ["client tool" if not entry.server else "", "already loaded" if loaded else "", mark or ""]
    about = ", ".join(part for part in parts if part)
    return f" ({about})" if about else ""


def _first_paragraph(text: str, limit: int = 300) -> str:
    paragraph = text.strip().split("\n\n")[0].replace("\n", " ")
    return paragraph if len(paragraph) <= limit else paragraph[: limit - 3].rstrip() + "..."


def parameter_summary(schema: dict[str, Any]) -> str:
    properties = schema.get("properties") or {}
    if not properties:
        return "none"
    required = set(schema.get("required") or [])
    parts = []
    for name, spec in properties.items():
        kind = _type_name(spec if isinstance(spec, dict) else {})
        parts.append(f"{name} ({kind}{', required' if name in required else ''})")
    return ", ".join(parts)


def _type_name(spec: dict[str, Any]) -> str:
    kind = spec.get("type")
    if isinstance(kind, list):
        return " | ".join(str(item) for item in kind)
    if kind:
        return str(kind)
    for key in ("anyOf", "oneOf"):
        options = [_type_name(option) for option in spec.get(key, []) if isinstance(option, dict)]
        if options:
            return " | ".join(dict.fromkeys(options))
    if "enum" in spec:
        return "enum"
    return "any"
