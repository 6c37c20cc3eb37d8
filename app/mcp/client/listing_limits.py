"""What the gateway takes from one MCP server's tool listing. A server is untrusted input like any caller: a tool
with a name too long to be one, or an input schema too large to send, is dropped; a long description is cut; past
`max_tools_per_server` tools the rest are dropped. Each kind of cut is one log line per listing and one note in
/healthz. Runs in the worker pool: a listing can hold thousands of tools.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from app.config import McpLimitsConfig

CUT_MARK = "..."


@dataclass(frozen=True)
class Listing:
    tools: list[Any]  # mcp Tool objects within the limits
    fingerprint: bytes  # of the listing as the server sent it: a re-listing with the same one changed nothing
    notes: list[str] = field(default_factory=list)  # what was cut or dropped, for the log and /healthz


def fingerprint(tools: list[Any]) -> bytes:
    """Hashed a tool at a time: one `json.dumps` of megabytes would hold the interpreter lock (and so the event
    loop) throughout."""
    digest = hashlib.sha256()
    for tool in tools:
        text = json.dumps(tool.model_dump(mode="json"), ensure_ascii=False, separators=(",", ":"), sort_keys=True)
        digest.update(text.encode("utf-8", "surrogatepass"))
        digest.update(b"\n")
    return digest.digest()


def bounded_listing(tools: list[Any], limits: McpLimitsConfig) -> Listing:
    """`tools` within `limits`, in the server's order."""
    kept: list[Any] = []
    long_names = large_schemas = cut = over = 0
    for tool in tools:
        if len(tool.name) > limits.max_name_chars:
            long_names += 1
            continue
        if _schema_bytes(tool.input_schema) > limits.max_schema_bytes:
            large_schemas += 1
            continue
        if len(kept) >= limits.max_tools_per_server:
            over += 1
            continue
        description = tool.description or ""
        if len(description) > limits.max_description_chars:
            cut += 1
            text = description[: limits.max_description_chars - len(CUT_MARK)] + CUT_MARK
            tool = tool.model_copy(update={"description": text})
        kept.append(tool)
    notes = [
        f"{count} {what}"
        for count, what in (
            (long_names, f"tool(s) dropped: name over {limits.max_name_chars} characters"),
            (large_schemas, f"tool(s) dropped: input schema over {limits.max_schema_bytes:,} bytes"),
            (over, f"tool(s) dropped: over max_tools_per_server ({limits.max_tools_per_server:,})"),
            (cut, f"description(s) cut to {limits.max_description_chars:,} characters"),
        )
        if count
    ]
    return Listing(kept, fingerprint(tools), notes)


def _schema_bytes(schema: Any) -> int:
    return len(json.dumps(schema, ensure_ascii=False, separators=(",", ":"), default=str).encode("utf-8", "replace"))
