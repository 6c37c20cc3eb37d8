"""MCP results become tool-message text: nothing dropped silently, errors keep the server's words."""

from __future__ import annotations

import mcp_types

from app.mcp.client.results import result_text


def _result(*content: object, structured: object = None, error: bool = False) -> mcp_types.CallToolResult:
    return mcp_types.CallToolResult(content=list(content), structured_content=structured, is_error=error)


def test_text_blocks_are_joined() -> None:
    text = result_text(
        _result(mcp_types.TextContent(type="text", text="a"), mcp_types.TextContent(type="text", text="b")), 100
    )
    assert text == "a\nb"


def test_structured_content_alone_is_json() -> None:
    assert result_text(_result(structured={"temp": 21, "city": "Zürich"}), 100) == '{"temp": 21, "city": "Zürich"}'


def test_images_resources_and_links_are_described() -> None:
    image = mcp_types.ImageContent(type="image", data="aGVsbG8gd29ybGQh", mime_type="image/png")
    link = mcp_types.ResourceLink(type="resource_link", name="report", uri="file:///r.pdf", description="Q3 report")
    blob = mcp_types.EmbeddedResource(
        type="resource",
        resource=mcp_types.BlobResourceContents(uri="mem://x", blob="AAAA", mime_type="application/zip"),
    )
    text = result_text(_result(image, link, blob), 1000)
    assert "[image content: image/png, 12 bytes, not shown]" in text
    assert "[resource link: report <file:///r.pdf>: Q3 report]" in text
    assert "[embedded resource mem://x: application/zip, 3 bytes, not shown]" in text


def test_errors_are_prefixed_and_truncation_is_noted() -> None:
    assert (
        result_text(_result(mcp_types.TextContent(type="text", text="disk full"), error=True), 100)
        == "Error: disk full"
    )
    assert result_text(_result(error=True), 100).startswith("Error: the tool reported an error")
    assert result_text(_result(), 100) == "(the tool returned no content)"
    long = result_text(_result(mcp_types.TextContent(type="text", text="x" * 5000)), 500)
    assert len(long) <= 500 and long.endswith("[truncated by toolsift: showing 500 of 5,000 characters]")
