"""The tracing seam: off (and free) unless the OTEL_* variables ask for an exporter, the SDK's own parts when they
do, and nothing secret in a span."""

from __future__ import annotations

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from app.common import redaction, tracing


def test_without_an_exporter_asked_for_tracing_is_off_and_every_call_is_the_no_op() -> None:
    assert tracing.wanted_exporters({}) == []
    assert tracing.wanted_exporters({"OTEL_SERVICE_NAME": "gw", "OTEL_TRACES_SAMPLER": "always_on"}) == []
    assert tracing.wanted_exporters({"OTEL_TRACES_EXPORTER": "none"}) == []
    assert not tracing.enabled()
    span = tracing.start("invoke_agent toolsift", {tracing.IDENTITY: "anyone"})
    assert span is tracing.NOOP and not span.recording
    assert span.child("chat m", {}) is tracing.NOOP
    with span.current(), tracing.caller_scope({tracing.IDENTITY: "x"}), tracing.span("s", {}) as inner:
        assert inner is tracing.NOOP
    span.set({"a": 1})
    span.fail("x", "y")
    span.end()


def test_the_standard_variables_choose_the_exporter_and_disabled_wins() -> None:
    assert tracing.wanted_exporters({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}) == ["otlp"]
    assert tracing.wanted_exporters({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}) == ["otlp"]
    assert tracing.wanted_exporters({"OTEL_TRACES_EXPORTER": "console, otlp"}) == ["console", "otlp"]
    disabled = {"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}
    assert tracing.wanted_exporters(disabled) == []


def test_otlp_is_the_sdks_batch_processor_and_http_exporter_named_after_the_service(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.delenv("OTEL_SERVICE_NAME", raising=False)
    monkeypatch.delenv("OTEL_RESOURCE_ATTRIBUTES", raising=False)
    provider = tracing.sdk_provider(["otlp"])
    assert provider is not None
    try:
        processors = provider._active_span_processor._span_processors
        assert [type(p) for p in processors] == [BatchSpanProcessor]
        assert isinstance(processors[0]._batch_processor._exporter, OTLPSpanExporter)
        assert provider.resource.attributes["service.name"] == "toolsift"
    finally:
        provider.shutdown()
    monkeypatch.setenv("OTEL_SERVICE_NAME", "team-gateway")
    named = tracing.sdk_provider(["otlp"])
    assert named is not None and named.resource.attributes["service.name"] == "team-gateway"
    named.shutdown()
    assert tracing.sdk_provider(["zipkin"]) is None  # unsupported: said in the log, nothing exported


def test_children_carry_the_callers_attributes_and_every_text_is_redacted(exported: InMemorySpanExporter) -> None:
    token = redaction.register(["sk-very-secret-key"])
    try:
        caller = tracing.caller_attributes("alice", "req_1", "chat_completions")
        request = tracing.start("invoke_agent toolsift", {tracing.REQUEST_MODEL: "m"}, caller=caller)
        round_span = request.child("chat m", {tracing.OPERATION: "chat"}, "client")
        round_span.fail("upstream_error", "the upstream said: bad key sk-very-secret-key")
        round_span.end()
        with request.current(), tracing.span("execute_tool t", {tracing.TOOL_NAME: "t"}, "client"):
            pass
        request.set({tracing.FINISH_REASONS: ["stop"], "note": "sk-very-secret-key"})
        request.end()
        request.end()  # once only
    finally:
        redaction.unregister(token)
    spans = {span.name: span for span in exported.get_finished_spans()}
    assert set(spans) == {"invoke_agent toolsift", "chat m", "execute_tool t"}
    root = spans["invoke_agent toolsift"]
    for name in ("chat m", "execute_tool t"):
        child = spans[name]
        assert child.parent is not None and child.parent.span_id == root.context.span_id
        assert child.attributes is not None and child.attributes[tracing.IDENTITY] == "alice"
        assert child.attributes[tracing.REQUEST_ID] == "req_1"
    failed = spans["chat m"]
    assert failed.attributes is not None and failed.attributes[tracing.ERROR_TYPE] == "upstream_error"
    assert failed.status.description == "the upstream said: bad key [redacted]"
    assert root.attributes is not None and root.attributes["note"] == "[redacted]"
    assert tuple(root.attributes[tracing.FINISH_REASONS]) == ("stop",)  # type: ignore[arg-type]


def test_a_scope_gives_its_caller_to_spans_started_inside_it(exported: InMemorySpanExporter) -> None:
    scope = tracing.caller_scope(tracing.caller_attributes("bob", None, "mcp"))
    with scope, tracing.span("execute_tool search_tools", {}):
        pass
    (span,) = exported.get_finished_spans()
    assert span.attributes == {tracing.IDENTITY: "bob", tracing.FRONT: "mcp"}


def test_an_exception_leaving_a_span_marks_it_failed_by_its_class(exported: InMemorySpanExporter) -> None:
    with pytest.raises(TimeoutError), tracing.span("execute_tool slow", {}):
        raise TimeoutError("no answer")
    (span,) = exported.get_finished_spans()
    assert span.attributes is not None and span.attributes[tracing.ERROR_TYPE] == "TimeoutError"
    assert not span.status.is_ok
