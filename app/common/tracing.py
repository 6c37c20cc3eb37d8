"""Traces (OpenTelemetry), the one seam every part of the gateway records spans through.

Off unless asked for: `setup` (the gateway's start) turns tracing on only when the standard `OTEL_*` variables ask
for an exporter (`OTEL_TRACES_EXPORTER`, `OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) and
the `otel` extra (the SDK and its OTLP exporter) is installed, or when a tracer provider was set before it
(`opentelemetry-instrument`). `OTEL_SDK_DISABLED` turns it off. Off, every helper here returns `NOOP` without
calling OpenTelemetry at all, so a request pays an attribute check, not a span.

Spans never hold message contents or secrets: callers pass counts, names and ids, and every text value is
redacted here (app/common/redaction.py) on its way in. The caller's attributes (identity, request id, front) travel with
the trace context, so every span of a request carries them, the MCP client's and the search's included.

A span started in an async generator is never made current there (a generator's context is its reader's, and
resuming it from another task could not restore it): it is a parent passed explicitly, and `Span.current` makes it
current only inside one coroutine, around an await that reaches another library (the MCP client) or its spans.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Literal

from app import toolsift_version
from app.common import redaction

try:  # the API comes with the web framework; the SDK and its exporter with the `otel` extra
    from opentelemetry import context as otel_context
    from opentelemetry import trace as otel_trace
except ImportError:  # pragma: no cover - tracing stays off
    _API = False
else:
    _API = True

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.trace import Tracer

log = logging.getLogger("toolsift.tracing")

AttributeValue = str | bool | int | float | Sequence[str]
Attributes = Mapping[str, AttributeValue | None]  # None: not set
Kind = Literal["internal", "client", "server"]

# The GenAI semantic conventions' names, where they apply
OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
AGENT_NAME = "gen_ai.agent.name"
REQUEST_MODEL = "gen_ai.request.model"
REQUEST_STREAM = "gen_ai.request.stream"
RESPONSE_MODEL = "gen_ai.response.model"
RESPONSE_ID = "gen_ai.response.id"
FINISH_REASONS = "gen_ai.response.finish_reasons"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
ERROR_TYPE = "error.type"
# toolsift's own
IDENTITY = "toolsift.identity"
REQUEST_ID = "toolsift.request.id"
FRONT = "toolsift.front"
MCP_SERVER = "toolsift.mcp.server"

_CALLER_KEY = "toolsift.caller"  # the caller's attributes, in the trace context
_tracer: Tracer | None = None
_provider: TracerProvider | None = None  # the one `setup` made, flushed at stop
_configured = False


class Span:
    """One span, or nothing (`NOOP`) when tracing is off: the same calls either way."""

    __slots__ = ("_span", "caller")

    def __init__(self, span: otel_trace.Span | None, caller: Mapping[str, AttributeValue]) -> None:
        self._span = span
        self.caller = caller  # the caller's attributes, given to every span below this one

    @property
    def recording(self) -> bool:
        return self._span is not None

    def set(self, attributes: Attributes) -> None:
        if self._span is not None:
            self._span.set_attributes(_clean(attributes))

    def fail(self, error_type: str, message: str = "") -> None:
        """Mark the span failed: `error_type` is a low-cardinality class (a code, `tool_error`), `message` a
        description (redacted)."""
        if self._span is not None:
            self._span.set_attribute(ERROR_TYPE, redaction.redact(error_type))
            self._span.set_status(otel_trace.Status(otel_trace.StatusCode.ERROR, redaction.redact(message)[:500]))

    def end(self) -> None:
        """End the span (once: later calls, and attributes set after, are ignored)."""
        if self._span is not None:
            self._span.end()
            self._span = None

    def child(self, name: str, attributes: Attributes, kind: Kind = "internal") -> Span:
        """A span below this one, not made current (safe anywhere, generators included)."""
        if self._span is None or _tracer is None:
            return NOOP
        return _start(_tracer, name, attributes, kind, self._context(), self.caller)

    @contextmanager
    def current(self) -> Iterator[None]:
        """This span as the current one (and its caller's attributes with it) for the block: only inside one
        coroutine, never across a generator's yield."""
        if self._span is None:
            yield
            return
        token = otel_context.attach(self._context())
        try:
            yield
        finally:
            otel_context.detach(token)

    def _context(self) -> otel_context.Context:
        assert self._span is not None
        return otel_context.set_value(_CALLER_KEY, self.caller, otel_trace.set_span_in_context(self._span))


NOOP = Span(None, {})


def enabled() -> bool:
    return _tracer is not None


def start(name: str, attributes: Attributes, kind: Kind = "internal", caller: Attributes | None = None) -> Span:
    """A span below the current one, not made current. `caller` (identity, request id, front) is given to it and
    every span below it; without it, the current context's caller is."""
    if _tracer is None:
        return NOOP
    inherited = _current_caller()
    mine = {**inherited, **_clean(caller)} if caller else inherited
    return _start(_tracer, name, attributes, kind, None, mine)


@contextmanager
def span(name: str, attributes: Attributes, kind: Kind = "internal") -> Iterator[Span]:
    """A span below the current one, current for the block (inside one coroutine), ended at its end; an exception
    leaving the block marks it failed with the exception's class."""
    if _tracer is None:
        yield NOOP
        return
    opened = _start(_tracer, name, attributes, kind, None, _current_caller())
    try:
        with opened.current():
            yield opened
    except BaseException as exc:
        opened.fail(type(exc).__qualname__, str(exc))
        raise
    finally:
        opened.end()


@contextmanager
def caller_scope(caller: Attributes) -> Iterator[None]:
    """The caller's attributes for every span started in the block (inside one coroutine): for a front whose
    work has no request span of its own (the MCP front's tool calls)."""
    if _tracer is None:
        yield
        return
    token = otel_context.attach(otel_context.set_value(_CALLER_KEY, {**_current_caller(), **_clean(caller)}))
    try:
        yield
    finally:
        otel_context.detach(token)


def caller_attributes(identity: str, request_id: str | None, front: str) -> dict[str, AttributeValue]:
    return {IDENTITY: identity, FRONT: front, **({REQUEST_ID: request_id} if request_id else {})}


def _current_caller() -> Mapping[str, AttributeValue]:
    found = otel_context.get_value(_CALLER_KEY)
    return found if isinstance(found, Mapping) else {}


def _start(
    tracer: Tracer,
    name: str,
    attributes: Attributes,
    kind: Kind,
    parent: otel_context.Context | None,
    caller: Mapping[str, AttributeValue],
) -> Span:
    opened = tracer.start_span(
        redaction.redact(name), parent, _KINDS[kind], attributes={**caller, **_clean(attributes)}
    )
    return Span(opened, caller)


def _clean(attributes: Attributes) -> dict[str, AttributeValue]:
    """The set values, every text redacted: whatever a span holds leaves the process."""
    cleaned: dict[str, AttributeValue] = {}
    for key, value in attributes.items():
        if value is None:
            continue
        if isinstance(value, str):
            value = redaction.redact(value)
        elif not isinstance(value, bool | int | float):
            value = [redaction.redact(item) for item in value]
        cleaned[key] = value
    return cleaned


if _API:
    _KINDS = {
        "internal": otel_trace.SpanKind.INTERNAL,
        "client": otel_trace.SpanKind.CLIENT,
        "server": otel_trace.SpanKind.SERVER,
    }


def setup() -> None:
    """Turn tracing on if the environment asks for it (once per process; each worker process runs it)."""
    global _configured, _provider
    if _configured:
        return
    _configured = True
    if not _API or _flag(os.environ, "OTEL_SDK_DISABLED"):
        return
    existing = otel_trace.get_tracer_provider()
    if not isinstance(existing, otel_trace.ProxyTracerProvider | otel_trace.NoOpTracerProvider):
        _use_tracer(existing.get_tracer("toolsift", toolsift_version()))  # set up before us: join it
        return
    wanted = wanted_exporters(os.environ)
    if not wanted:
        return
    try:
        provider = sdk_provider(wanted)
    except ImportError:
        log.warning("traces are asked for (OTEL_*) but the otel extra is not installed: pip install 'toolsift[otel]'")
        return
    if provider is None:
        return
    _provider = provider
    otel_trace.set_tracer_provider(provider)  # the libraries' own spans (the MCP client's) join the same traces
    _use_tracer(provider.get_tracer("toolsift", toolsift_version()))


def wanted_exporters(environ: Mapping[str, str]) -> list[str]:
    """The exporters the environment asks for: `OTEL_TRACES_EXPORTER`, or `otlp` when only an OTLP endpoint is
    set; none without either (the SDK's default of `otlp` to localhost would send spans nobody asked for)."""
    if _flag(environ, "OTEL_SDK_DISABLED"):
        return []
    names = environ.get("OTEL_TRACES_EXPORTER", "").strip()
    endpoint = environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    if not names and not endpoint:
        return []
    return [name.strip() for name in (names or "otlp").split(",") if name.strip() and name.strip() != "none"]


def sdk_provider(exporters: list[str]) -> TracerProvider | None:
    """The SDK's tracer provider with a batch processor per exporter; each part reads its own `OTEL_*` settings
    (endpoint, headers, timeout, compression, sampler, batch sizes, resource attributes)."""
    from opentelemetry.sdk.resources import SERVICE_NAME, SERVICE_VERSION, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter

    chosen: list[SpanExporter] = []
    for name in exporters:
        if name == "otlp":
            protocol = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or os.environ.get(
                "OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"
            )
            if protocol != "http/protobuf":
                log.warning("OTLP protocol %s is not supported; traces go over http/protobuf", protocol)
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            chosen.append(OTLPSpanExporter())
        elif name == "console":
            chosen.append(ConsoleSpanExporter())
        else:
            log.warning("OTEL_TRACES_EXPORTER=%s is not supported (otlp, console or none); it is ignored", name)
    if not chosen:
        return None
    resource = Resource.create()
    if str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):  # OTEL_SERVICE_NAME unset
        resource = resource.merge(Resource({SERVICE_NAME: "toolsift", SERVICE_VERSION: toolsift_version()}))
    provider = TracerProvider(resource=resource)
    for exporter in chosen:
        provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider


def use(provider: otel_trace.TracerProvider | None) -> None:
    """Record through `provider` from now on (an embedding application's, or a test's), or turn tracing off."""
    global _configured
    _configured = provider is not None
    _use_tracer(provider.get_tracer("toolsift", toolsift_version()) if provider is not None else None)


def _use_tracer(tracer: Tracer | None) -> None:
    global _tracer
    _tracer = tracer


def flush() -> None:
    """Export what is pending (a stopping gateway): spans of its last requests are not lost at exit. Bounded, so
    an unreachable collector delays a shutdown by two seconds at most."""
    if _provider is not None:
        _provider.force_flush(timeout_millis=2000)


def _flag(environ: Mapping[str, str], name: str) -> bool:
    return environ.get(name, "").strip().lower() == "true"
