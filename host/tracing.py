"""OpenTelemetry spans at stage boundaries, free when tracing is off.

Modules write `with tracing.span("rss.fetch", {"server.address": host}) as s: ...`. Until `configure`
installs a tracer (an OTLP endpoint is set, or a test installs its own provider), `span` returns one
shared do-nothing object: no OpenTelemetry import (the SDK and exporter cost ~0.3 s, the CLI must stay
fast), no context switch, no allocation beyond the caller's attribute dict.

Exporting: OTLP over HTTP/protobuf to `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, `OTEL_EXPORTER_OTLP_ENDPOINT`
(the standard variables; headers, timeout and compression come from the standard variables too) or the
host setting `host.otlp_endpoint`. `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none` keep it off.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractContextManager, asynccontextmanager
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol

from host.errors import UserError

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.trace import Tracer

log = logging.getLogger("feedeater.tracing")

AttributeValue = str | bool | int | float
Attributes = Mapping[str, AttributeValue]


class SpanLike(Protocol):
    def set_attribute(self, key: str, value: AttributeValue) -> None: ...


class _NoSpan:
    """The span and context manager used while tracing is off: every method does nothing."""

    __slots__ = ()

    def set_attribute(self, key: str, value: AttributeValue) -> None:
        return None

    def __enter__(self) -> _NoSpan:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        return None

    async def __aenter__(self) -> _NoSpan:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        return None


NO_SPAN = _NoSpan()
_tracer: Tracer | None = None
_provider: TracerProvider | None = None  # set when configure() built it (and so must flush it)


def enabled() -> bool:
    return _tracer is not None


def span(
    name: str, attributes: Attributes | None = None, *, root: bool = False
) -> AbstractContextManager[Any]:
    """A child span of the current one (a new trace with `root=True`); the no-op span while tracing is off.

    Exceptions leaving the block are recorded on the span and set its status to error."""
    if _tracer is None:
        return NO_SPAN
    context = None
    if root:
        from opentelemetry.context import Context

        context = Context()
    return _tracer.start_as_current_span(name, context=context, attributes=attributes)


def aspan(name: str, attributes: Attributes | None = None) -> Any:
    """`span` for an `async with` line (beside `pool.acquire()` and `conn.transaction()`)."""
    return NO_SPAN if _tracer is None else _async_span(name, attributes)


@asynccontextmanager
async def _async_span(name: str, attributes: Attributes | None) -> AsyncIterator[Any]:
    with span(name, attributes) as current:
        yield current


def current() -> SpanLike:
    """The active span (the no-op span while tracing is off or outside any span)."""
    if _tracer is None:
        return NO_SPAN
    from opentelemetry.trace import get_current_span

    return get_current_span()


def annotate(attributes: Attributes) -> None:
    """Set attributes on the active span; callers skip building them when `enabled()` is False."""
    target = current()
    for key, value in attributes.items():
        target.set_attribute(key, value)


def fail(target: SpanLike, description: str) -> None:
    """Mark a span as failed without an exception (an HTTP error status, a parse error reported as data)."""
    if isinstance(target, _NoSpan):
        return
    from opentelemetry.trace import Status, StatusCode

    target.set_status(Status(StatusCode.ERROR, description))  # type: ignore[attr-defined]


def endpoint_from(env: Mapping[str, str], setting: str) -> str | None:
    """The OTLP traces URL to export to, or None when tracing stays off (pure)."""
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    if env.get("OTEL_TRACES_EXPORTER", "").strip().lower() == "none":
        return None
    if url := env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip():
        return url
    base = env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip() or setting.strip()
    return base.rstrip("/") + "/v1/traces" if base else None


def install(provider: TracerProvider | None) -> None:
    """Trace into `provider` (tests install one with an in-memory exporter), None = off again; the caller
    owns the provider's lifetime."""
    global _tracer
    _tracer = None if provider is None else provider.get_tracer("feedeater")


def configure(env: Mapping[str, str], *, setting: str, host_id: str) -> bool:
    """Export spans over OTLP/HTTP when an endpoint is configured; returns whether tracing is on."""
    global _provider
    url = endpoint_from(env, setting)
    if url is None:
        return False
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        raise UserError(
            "tracing is configured (an OTLP endpoint is set) but OpenTelemetry is not installed",
            "install it with `pip install 'feedeater[otel]'`, or unset OTEL_EXPORTER_OTLP_ENDPOINT",
        ) from None
    resource = Resource.create(
        {"service.name": env.get("OTEL_SERVICE_NAME") or "feedeater", "service.instance.id": host_id}
    )
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=url)))
    install(provider)
    _provider = provider
    log.info("tracing: exporting spans to %s", url)
    return True


def shutdown() -> None:
    """Flush and stop what `configure` started, then back to the no-op span (a provider a test installed
    is left alone)."""
    global _tracer, _provider
    if _provider is not None:
        _provider.shutdown()
        _tracer = _provider = None
