"""MCP tool results as the text of an OpenAI `tool` message.

Chat completions carry tool results as strings, so every MCP content block becomes text: text joined,
structured content as JSON when there is no text, binary content described (never silently dropped), and a
tool error prefixed with `Error:` while keeping the server's own words.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types

from app.common.redaction import redact, redact_value


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
    return truncate(redact(f"Error: {message}"), max_chars)


def redacted(result: mcp_types.CallToolResult) -> mcp_types.CallToolResult:
    """The result with configured secrets redacted from its text and structured content: a server may echo the
    headers or token it was sent, and its result goes to the model and to MCP clients."""
    content = [_redacted_block(block) for block in result.content]
    structured = redact_value(result.structured_content)
    if all(new is old for new, old in zip(content, result.content, strict=True)) and structured == (
        result.structured_content
    ):
        return result
    return result.model_copy(update={"content": content, "structured_content": structured})


def _redacted_block(block: Any) -> Any:
    if isinstance(block, mcp_types.TextContent):
        text = redact(block.text)
        return block if text == block.text else block.model_copy(update={"text": text})
    if isinstance(block, mcp_types.EmbeddedResource) and isinstance(block.resource, mcp_types.TextResourceContents):
        text = redact(block.resource.text)
        if text != block.resource.text:
            return block.model_copy(update={"resource": block.resource.model_copy(update={"text": text})})
    return block


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
