"""Service URLs as printed and logged: no password, no token (issue #30)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from host import bus
from host.cli import main
from host.redact import redact
from host.services import EmbeddedNats
from tests.services import feedeater_env


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (
            "postgresql://postgres:s3cret@127.0.0.1:5432/feedeater",
            "postgresql://postgres:***@127.0.0.1:5432/feedeater",
        ),
        ("postgresql://postgres@127.0.0.1:5432/feedeater", "postgresql://postgres@127.0.0.1:5432/feedeater"),
        (
            "postgresql://u:p@a:1/db?sslmode=require&password=x",
            "postgresql://u:***@a:1/db?sslmode=require&password=***",
        ),
        ("postgresql://u:p%40ss@db.example/x", "postgresql://u:***@db.example/x"),
        ("postgresql:///db?host=/run&password=x", "postgresql:///db?host=/run&password=***"),
        ("nats://Tok3n_-x@127.0.0.1:4222", "nats://***@127.0.0.1:4222"),
        ("nats://user:pw@n1:4222,nats://tok@n2:4222", "nats://user:***@n1:4222,nats://***@n2:4222"),
        ("tls://tok@nats.example:4443", "tls://***@nats.example:4443"),
        ("nats://127.0.0.1:4222", "nats://127.0.0.1:4222"),
        ("https://feeds.example.org/feed@2x.xml", "https://feeds.example.org/feed@2x.xml"),  # @ in the path
        ("not a url", "not a url"),
    ],
)
def test_credentials_never_show(url: str, shown: str) -> None:
    assert redact(url) == shown


async def test_services_commands_and_the_bus_log_print_no_secret(
    tmp_path: Path,
    database_url: str,
    own_nats: EmbeddedNats,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`services up` printed the URLs it was given, passwords included; `services status` the embedded
    ones (now with their secrets); BusLink logged the URL it attached to."""
    nats_url = own_nats.start()
    secrets = [urlsplit(database_url).password, urlsplit(nats_url).username]
    assert all(secrets)
    env = feedeater_env(tmp_path, database_url, nats_url)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    home_nats = EmbeddedNats(tmp_path / "nats")  # an embedded server in this home: `status` lists it
    home_nats.start()
    try:
        printed = ""
        for command in (["services", "up"], ["services", "up", "--json"], ["services", "status", "--json"]):
            assert await asyncio.to_thread(main, command) == 0
            printed += capsys.readouterr().out
        assert "***" in printed and urlsplit(home_nats.start()).username not in printed
        assert not [s for s in secrets if s and s in printed]
        seen: list[str] = []
        handler = logging.Handler(logging.INFO)
        handler.emit = lambda record: seen.append(record.getMessage())  # type: ignore[method-assign]
        bus_log = logging.getLogger("feedeater.bus")
        bus_log.addHandler(handler)
        level = bus_log.level
        bus_log.setLevel(logging.INFO)  # one-shot commands log warnings only
        try:
            link = bus.BusLink(nats_url, name="redact-test", prepare=_nothing)
            assert await link.attach(asyncio.Event())
            assert link.nc is not None
            await link.nc.close()
        finally:
            bus_log.removeHandler(handler)
            bus_log.setLevel(level)
        assert any("attached to NATS" in line for line in seen) and secrets[1] not in "\n".join(seen)
    finally:
        home_nats.stop()


async def _nothing(_js: object) -> None:
    return None
