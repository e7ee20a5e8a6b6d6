"""host.tracing: off unless an OTLP endpoint is configured; the no-op span costs nothing to use."""

from __future__ import annotations

import sys

import pytest

from host import tracing
from host.errors import UserError
from tests.otlp import OtlpCollector


@pytest.mark.parametrize(
    ("env", "setting", "url"),
    [
        ({}, "", None),
        ({}, "http://collector:4318/", "http://collector:4318/v1/traces"),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318"}, "http://b:4318", "http://a:4318/v1/traces"),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t:9/x"}, "", "http://t:9/x"),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318", "OTEL_SDK_DISABLED": "true"}, "", None),
        ({"OTEL_TRACES_EXPORTER": "none"}, "http://b:4318", None),
    ],
)
def test_endpoint_from_the_standard_variables_or_the_host_setting(
    env: dict[str, str], setting: str, url: str | None
) -> None:
    assert tracing.endpoint_from(env, setting) == url


async def test_off_by_default_every_helper_is_the_shared_no_op() -> None:
    assert not tracing.enabled()
    assert not tracing.configure({}, setting="", host_id="h")
    with tracing.span("x", {"a": 1}, root=True) as s:
        s.set_attribute("b", 2)
        assert s is tracing.NO_SPAN and tracing.current() is tracing.NO_SPAN
        tracing.annotate({"c": 3})
        tracing.fail(s, "nothing happens")
    async with tracing.aspan("y") as s:
        assert s is tracing.NO_SPAN


def test_an_otlp_endpoint_turns_export_on_and_shutdown_flushes() -> None:
    with OtlpCollector() as collector:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": collector.url, "OTEL_SERVICE_NAME": "fe"}
        assert tracing.configure(env, setting="", host_id="h1")
        with (
            tracing.span("rss.poll", {"feedeater.feed.id": 7}, root=True),
            tracing.span("rss.fetch") as fetch,
        ):
            tracing.fail(fetch, "HTTP 500")
        tracing.shutdown()  # flushes the batch
    assert not tracing.enabled()
    [(path, content_type, _)] = collector.received
    assert path == "/v1/traces" and content_type == "application/x-protobuf"
    [resource_spans] = collector.resource_spans()
    resource = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
    assert resource["service.name"] == "fe" and resource["service.instance.id"] == "h1"
    spans = {s.name: s for scope in resource_spans.scope_spans for s in scope.spans}
    assert set(spans) == {"rss.poll", "rss.fetch"}
    assert spans["rss.fetch"].parent_span_id == spans["rss.poll"].span_id
    assert spans["rss.fetch"].status.message == "HTTP 500"


def test_an_endpoint_without_the_otel_extra_is_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry.exporter.otlp.proto.http.trace_exporter", None)
    with pytest.raises(UserError, match="OpenTelemetry is not installed") as caught:
        tracing.configure({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4318"}, setting="", host_id="h")
    assert "feedeater[otel]" in str(caught.value)
    assert not tracing.enabled()
