"""Every MCP call is a span below the current one, and the server gets that span's trace context (the MCP spec's
`params._meta.traceparent`), so its own spans join the same trace; a tool's error marks the span failed."""

from __future__ import annotations

from typing import Any

from fastmcp import Context, FastMCP
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from app.common import tracing
from tests.support import make_config


def probe_server() -> FastMCP:
    server = FastMCP("probe")

    @server.tool
    async def trace_context(ctx: Context) -> str:
        """The trace context this call came with."""
        meta = ctx.request_context.meta if ctx.request_context is not None else None
        return str((meta or {}).get("traceparent", "none"))

    @server.tool
    def refuse() -> str:
        """Always fails."""
        raise ValueError("no")

    return server


async def test_an_mcp_call_is_a_client_span_whose_context_reaches_the_server(
    gateway_factory: Any, exported: InMemorySpanExporter
) -> None:
    config = make_config(mcpServers={"probe": {"command": "unused"}}, tool_sets={})
    _, gateway = await gateway_factory(config, targets={"probe": probe_server()})
    request = tracing.start("invoke_agent toolsift", {}, caller=tracing.caller_attributes("alice", "req_1", "x"))
    with request.current():
        sent, failed = await gateway.mcp.call_tool("probe", "trace_context", {}, call_id="call_7")
        refused, refused_failed = await gateway.mcp.call_tool("probe", "refuse", {})
    request.end()
    assert not failed and refused_failed and "no" in refused
    calls = {span.name: span for span in exported.get_finished_spans() if span.name.startswith("execute_tool")}
    ran, error = calls["execute_tool trace_context"], calls["execute_tool refuse"]
    assert ran.kind is SpanKind.CLIENT and ran.parent is not None
    assert ran.context.trace_id == request_trace_id(exported)
    assert sent.startswith(f"00-{ran.context.trace_id:032x}-{ran.context.span_id:016x}-")
    assert ran.attributes is not None and ran.attributes[tracing.TOOL_CALL_ID] == "call_7"
    assert ran.attributes[tracing.MCP_SERVER] == "probe" and ran.attributes[tracing.IDENTITY] == "alice"
    assert error.attributes is not None and error.attributes[tracing.ERROR_TYPE] == "tool_error"
    assert not error.status.is_ok


def request_trace_id(exported: InMemorySpanExporter) -> int:
    (request,) = [span for span in exported.get_finished_spans() if span.name == "invoke_agent toolsift"]
    return request.context.trace_id
