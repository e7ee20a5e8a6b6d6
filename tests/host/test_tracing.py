"""host.tracing: off unless an OTLP endpoint is configured; the no-op span costs nothing to use."""

from __future__ import annotations

import pytest

from host import tracing


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
