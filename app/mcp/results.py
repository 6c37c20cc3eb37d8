"""MCP tool results as the text of an OpenAI `tool` message.

Chat completions carry tool results as strings, so every MCP content block becomes text: text joined,
structured content as JSON when there is no text, binary content described (never silently dropped), and a
tool error prefixed with `Error:` while keeping the server's own words.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types


def result_text(result: mcp_types.CallToolResult, max_chars: int) -> str:
    parts = [_content_text(block) for block in result.content]
    texts = [part for part in parts if part]
    if result.structured_content is not None and not any(isinstance(b, mcp_types.TextContent) for b in result.content):
        texts.insert(0, json.dumps(result.structured_content, ensure_ascii=False))
    text = "\n".join(texts)
    if result.is_error:
        text = "Error: " + (text or "the tool reported an error without a message")
    elif not text:
        text = "(the tool returned no content)"
    return truncate(text, max_chars)


def error_text(message: str, max_chars: int) -> str:
    return truncate(f"Error: {message}", max_chars)


def truncate(text: str, max_chars: int) -> str:
    if len(text) <= max_chars:
        return text
    note = f"\n[truncated by toolsift: showing {max_chars:,} of {len(text):,} characters]"
    return text[: max(0, max_chars - len(note))] + note


def _content_text(block: Any) -> str:
    if isinstance(block, mcp_types.TextContent):
        return block.text
    if isinstance(block, mcp_types.ImageContent | mcp_types.AudioContent):
        kind = "image" if isinstance(block, mcp_types.ImageContent) else "audio"
        return f"[{kind} content: {block.mime_type}, {_decoded_size(block.data)} bytes, not shown]"
    if isinstance(block, mcp_types.ResourceLink):
        about = f": {block.description}" if block.description else ""
        return f"[resource link: {block.name} <{block.uri}>{about}]"
    if isinstance(block, mcp_types.EmbeddedResource):
        resource = block.resource
        if isinstance(resource, mcp_types.TextResourceContents):
            return resource.text
        mime = resource.mime_type or "application/octet-stream"
        return f"[embedded resource {resource.uri}: {mime}, {_decoded_size(resource.blob)} bytes, not shown]"
    return f"[{getattr(block, 'type', 'unknown')} content not shown]"


def _decoded_size(data: str) -> int:
    return len(data) * 3 // 4
