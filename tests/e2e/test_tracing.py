"""Traces through the real server: uvicorn serving the gateway with a gateway key, the official SDKs and an MCP
client over HTTP, a scripted upstream, in-memory MCP servers, and the SDK's in-memory exporter reading the spans.

One chat request that searches and calls an MCP tool is one trace: the request's span, below it a span per upstream
round, one for the search and one for the MCP call, each with the GenAI conventions' attributes and the caller's
identity, and none with what the messages said."""

from __future__ import annotations

import asyncio
import gzip
import json
import sys
import threading
import time
from collections.abc import AsyncIterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import anthropic
import openai
import pytest
import uvicorn
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from app.common import tracing
from app.common.identity import Identity
from app.config import parse_config
from app.engine.api import Engine
from app.engine.gateway import Gateway
from app.server.app import create_app
from tests.support import SERVERS, ScriptedUpstream, completion, free_port, gateway_config, load_example, served_gateway
from tests.support.mcp import mcp_client, text

KEY = "key-alice"
ALICE = Identity.for_key(KEY).id
CONVERT = {"amount": 5, "from_currency": "USD", "to_currency": "EUR"}
SECRET_WORDS = "my-private-words-4711"  # in the user's message: never in a span
QUERY = "convert currency"


@pytest.fixture
async def served(
    scripted: ScriptedUpstream, exported: InMemorySpanExporter
) -> AsyncIterator[tuple[str, InMemorySpanExporter]]:
    servers = {"weather": {"command": "unused"}, "finance": {"command": "unused", "defer_loading": True}}
    config = parse_config(
        gateway_config(scripted, up_key="sk-up-secret", mcpServers=servers, auth={"api_keys": [KEY]}), environ={}
    )
    targets = {name: load_example(name).mcp for name in ("weather", "finance")}
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(create_app(Engine(Gateway(config, mcp_targets=targets))), port=port, log_level="warning")
    )
    serving = asyncio.create_task(server.serve())
    while not server.started:
        assert not serving.done(), "the gateway did not start"
        await asyncio.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}", exported
    finally:
        server.should_exit = True
        await serving


def _script(scripted: ScriptedUpstream) -> None:
    scripted.script(
        completion(calls=[("search_tools", {"query": QUERY})]),
        completion(calls=[("finance__convert_currency", CONVERT)]),
        completion("About 4.6 EUR."),
    )


async def _trace(exporter: InMemorySpanExporter, request_id: str) -> list[ReadableSpan]:
    """The spans of the trace whose request span has `request_id`, once that span has ended."""
    for _ in range(250):
        roots = [
            span
            for span in exporter.get_finished_spans()
            if span.name == "invoke_agent toolsift" and (span.attributes or {}).get(tracing.REQUEST_ID) == request_id
        ]
        if roots:
            trace_id = roots[0].context.trace_id
            return [span for span in exporter.get_finished_spans() if span.context.trace_id == trace_id]
        await asyncio.sleep(0.02)
    raise AssertionError(f"no request span for {request_id}")


def _attributes(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def _children(spans: Sequence[ReadableSpan], parent: ReadableSpan, name_prefix: str) -> list[ReadableSpan]:
    found = [span for span in spans if span.name.startswith(name_prefix)]
    for span in found:
        assert span.parent is not None and span.parent.span_id == parent.context.span_id, span.name
    return sorted(found, key=lambda span: span.start_time or 0)


def _nothing_said(spans: Sequence[ReadableSpan]) -> None:
    """No span holds what the user wrote, the search's query, a tool's arguments or a key."""
    for span in spans:
        written = json.dumps([span.name, _attributes(span), span.status.description], default=list)
        for words in (SECRET_WORDS, QUERY, "USD", "sk-up-secret", "sk-ant", KEY):
            assert words not in written, (words, span.name)


def _request_tree(spans: list[ReadableSpan], front: str, model: str, provider: str, stream: bool) -> None:
    (root,) = [span for span in spans if span.name == "invoke_agent toolsift"]
    attributes = _attributes(root)
    assert root.parent is None and root.kind is SpanKind.INTERNAL
    assert attributes[tracing.OPERATION] == "invoke_agent" and attributes[tracing.IDENTITY] == ALICE
    assert attributes[tracing.FRONT] == front and attributes[tracing.REQUEST_MODEL] in ("fast", "sonnet")
    assert attributes[tracing.PROVIDER] == provider and attributes[tracing.RESPONSE_MODEL]
    assert attributes[tracing.INPUT_TOKENS] == 30 and attributes[tracing.OUTPUT_TOKENS] == 15
    assert attributes["toolsift.rounds"] == 3 and attributes["toolsift.searches"] == 1

    rounds = _children(spans, root, "chat ")
    assert [span.name for span in rounds] == [f"chat {model}"] * 3
    for number, span in enumerate(rounds, 1):
        round_attributes = _attributes(span)
        assert span.kind is SpanKind.CLIENT and round_attributes[tracing.OPERATION] == "chat"
        assert round_attributes["toolsift.round"] == number and round_attributes[tracing.REQUEST_STREAM] is stream
        assert round_attributes[tracing.REQUEST_MODEL] == model and round_attributes[tracing.PROVIDER] == provider
        assert round_attributes[tracing.INPUT_TOKENS] == 10 and round_attributes[tracing.OUTPUT_TOKENS] == 5
        assert round_attributes[tracing.IDENTITY] == ALICE and round_attributes[tracing.FRONT] == front

    (search,) = _children(spans, root, "execute_tool search_tools")
    searched = _attributes(search)
    assert searched[tracing.OPERATION] == "execute_tool" and searched[tracing.TOOL_NAME] == "search_tools"
    assert searched[tracing.TOOL_CALL_ID] == "call_0_search_tools" and searched[tracing.IDENTITY] == ALICE
    assert searched["toolsift.search.queries"] == 1 and searched["toolsift.search.results"] >= 1
    assert (rounds[0].end_time or 0) <= (search.start_time or 0) <= (rounds[1].start_time or 0)

    (called,) = _children(spans, root, "execute_tool convert_currency")
    call = _attributes(called)
    assert called.kind is SpanKind.CLIENT and call[tracing.OPERATION] == "execute_tool"
    assert call[tracing.TOOL_NAME] == "convert_currency" and call[tracing.MCP_SERVER] == "finance"
    assert call[tracing.TOOL_CALL_ID] == "call_0_finance__convert_currency"
    assert call[tracing.IDENTITY] == ALICE and call[tracing.FRONT] == front and called.status.is_ok
    assert (rounds[1].end_time or 0) <= (called.start_time or 0) <= (rounds[2].start_time or 0)
    _nothing_said(spans)


async def test_a_chat_completion_is_one_trace_of_rounds_a_search_and_an_mcp_call(
    served: tuple[str, InMemorySpanExporter], scripted: ScriptedUpstream
) -> None:
    base, exporter = served
    _script(scripted)
    client = openai.AsyncOpenAI(base_url=f"{base}/v1", api_key=KEY, max_retries=0)
    reply = await client.chat.completions.create(
        model="fast",
        messages=[{"role": "user", "content": f"5 USD in EUR? {SECRET_WORDS}"}],
        extra_headers={"x-request-id": "req_traced_chat"},
    )
    assert reply.choices[0].message.content == "About 4.6 EUR."
    spans = await _trace(exporter, "req_traced_chat")
    _request_tree(spans, "chat_completions", "gpt-test", "openai", stream=False)
    (root,) = [span for span in spans if span.name == "invoke_agent toolsift"]
    assert _attributes(root)[tracing.FINISH_REASONS] == ("stop",)


async def test_a_streamed_message_is_the_same_trace_through_an_anthropic_upstream(
    served: tuple[str, InMemorySpanExporter], scripted: ScriptedUpstream
) -> None:
    base, exporter = served
    _script(scripted)
    client = anthropic.AsyncAnthropic(base_url=base, api_key=KEY, max_retries=0)
    async with client.messages.stream(
        model="sonnet",
        max_tokens=64,
        messages=[{"role": "user", "content": f"5 USD in EUR? {SECRET_WORDS}"}],
        extra_headers={"x-request-id": "req_traced_messages"},
    ) as stream:
        said = "".join([text async for text in stream.text_stream])
    assert said == "About 4.6 EUR."
    spans = await _trace(exporter, "req_traced_messages")
    _request_tree(spans, "messages", "c-4", "anthropic", stream=True)


async def test_the_mcp_fronts_search_and_tool_call_carry_the_caller(
    served: tuple[str, InMemorySpanExporter],
) -> None:
    base, exporter = served
    async with mcp_client(f"{base}/mcp", KEY) as client:
        found = await client.call_tool_mcp("search_tools", {"query": QUERY})
        assert "finance__convert_currency" in text(found)
        ran = await client.call_tool_mcp("finance__convert_currency", CONVERT)
        assert not ran.is_error and "EUR" in text(ran)
    spans = exporter.get_finished_spans()
    (search,) = [span for span in spans if span.name == "execute_tool search_tools"]
    searched = _attributes(search)
    assert searched[tracing.IDENTITY] == ALICE and searched[tracing.FRONT] == "mcp"
    assert searched["toolsift.search.queries"] == 1 and searched["toolsift.search.results"] >= 1
    (called,) = [span for span in spans if span.name == "execute_tool convert_currency"]
    call = _attributes(called)
    assert call[tracing.IDENTITY] == ALICE and call[tracing.FRONT] == "mcp" and call[tracing.MCP_SERVER] == "finance"
    assert call[tracing.OPERATION] == "execute_tool" and called.kind is SpanKind.CLIENT
    assert not [span for span in spans if span.name == "invoke_agent toolsift"], "a tool call is not a chat request"
    _nothing_said(spans)


async def test_a_refused_request_is_a_failed_request_span(served: tuple[str, InMemorySpanExporter]) -> None:
    base, exporter = served
    client = openai.AsyncOpenAI(base_url=f"{base}/v1", api_key=KEY, max_retries=0)
    with pytest.raises(openai.NotFoundError):
        await client.chat.completions.create(
            model="no-such-model",
            messages=[{"role": "user", "content": "hi"}],
            extra_headers={"x-request-id": "req_no"},
        )
    (root,) = await _trace(exporter, "req_no")
    assert not root.status.is_ok and _attributes(root)[tracing.ERROR_TYPE] == "model_not_found"
    assert _attributes(root)[tracing.IDENTITY] == ALICE


class _Collector(BaseHTTPRequestHandler):
    """An OTLP/HTTP receiver: each POST /v1/traces, decoded."""

    received: ClassVar[list[ExportTraceServiceRequest]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["content-length"]))
        if self.headers.get("content-encoding") == "gzip":
            body = gzip.decompress(body)
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        type(self).received.append(request)
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        return None


def test_toolsift_serve_exports_over_otlp_when_the_standard_variables_say_so(
    scripted: ScriptedUpstream, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`toolsift serve` as a user runs it, with OTEL_EXPORTER_OTLP_ENDPOINT and OTEL_SERVICE_NAME only: its
    spans arrive at the collector over OTLP/HTTP, named for the service."""
    collector = ThreadingHTTPServer(("127.0.0.1", 0), _Collector)
    threading.Thread(target=collector.serve_forever, daemon=True).start()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{collector.server_address[1]}")
    monkeypatch.setenv("OTEL_SERVICE_NAME", "team-gateway")
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
    weather = {"command": sys.executable, "args": [str(SERVERS / "weather.py")], "defer_loading": True}
    config = gateway_config(scripted, claude=False, up_key="sk-up-secret", mcpServers={"weather": weather})
    (tmp_path / "config.json").write_text(json.dumps(config))
    scripted.script(completion(calls=[("search_tools", {"query": "weather"})]), completion("Sunny."))
    try:
        with served_gateway(tmp_path / "config.json", free_port()) as base:
            client = openai.OpenAI(base_url=f"{base}/v1", api_key="unused", max_retries=0)
            reply = client.chat.completions.create(
                model="fast",
                messages=[{"role": "user", "content": "weather?"}],
                extra_headers={"x-request-id": "req_otlp"},
            )
            assert reply.choices[0].message.content == "Sunny."
            names: dict[str, dict[str, Any]] = {}
            for _ in range(200):
                names = {
                    span.name: {kv.key: kv.value for kv in resource.resource.attributes}
                    for request in _Collector.received
                    for resource in request.resource_spans
                    for scope in resource.scope_spans
                    for span in scope.spans
                }
                if "invoke_agent toolsift" in names:
                    break
                time.sleep(0.05)
    finally:
        collector.shutdown()
    assert {"invoke_agent toolsift", "chat gpt-test", "execute_tool search_tools"} <= set(names)
    assert names["invoke_agent toolsift"]["service.name"].string_value == "team-gateway"
