"""Misbehaving feed servers, all polled together with well-behaved ones: each failure is recorded in
mod_rss.poll_state and backed off as documented (modules/rss/schedule.py), the good feeds are untouched."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path
from typing import Any

import pytest

from host import outbox
from host.runtime import Host
from host.services import free_port
from modules.rss import store
from tests.feedserver import FeedServer, Route, ago, rss, self_signed_tls
from tests.services import assert_exactly_once, make_host, reset_stream

BASE = ago(hours=30)
BODY = rss([(f"g{i}", f"entry {i}", BASE + timedelta(hours=i), "text") for i in range(3)])
RETRY_AFTER_S = 120
JITTER = 0.15  # ScheduleParams.jitter
BACKOFF_BASE_S = 60  # ScheduleParams.backoff_base_s


def bad_routes() -> dict[str, Route]:
    routes = {
        "trickle": Route(body=BODY, trickle=(64, 0.4)),  # ~7 s for the body, against a 2 s timeout
        "truncated": Route(body=BODY, truncate_at=len(BODY) // 3),
        "lying-length": Route(body=BODY, content_length=len(BODY) + 500),
        "endless": Route(status=302, location="/r/1"),
        "loop": Route(status=301, location="/loop-b"),
        "500": Route(status=500, body=b"oops"),
        "429": Route(status=429, body=b"slow down"),
        "429-retry-after": Route(status=429, body=b"slow down", retry_after=str(RETRY_AFTER_S)),
    }
    return {f"/{k}": v for k, v in routes.items()}


@pytest.fixture
async def host(tmp_path: Path, database_url: str, nats_url: str) -> Any:
    await reset_stream(nats_url)
    env = {
        "FEEDEATER_RSS_TIMEOUT_SECONDS": "2",
        "FEEDEATER_RSS_PER_HOST_CONCURRENCY": "50",
        "FEEDEATER_RSS_PARSE_WORKERS": "0",
    }
    h = make_host(tmp_path, database_url, nats_url, env=env)
    await h.open()
    yield h
    await h.close()


async def poll_round(host: Host) -> None:
    await host.require_pool().execute("UPDATE mod_rss.poll_state SET next_poll_at = now()")
    result = await host.run_job_once("rss.poll")
    assert result.status == "ok", result.error


async def states(host: Host) -> dict[str, dict[str, Any]]:
    rows = await host.require_pool().fetch(
        """SELECT f.url, p.*, (SELECT count(*) FROM mod_rss.entries e WHERE e.feed_id = f.id) AS entries
           FROM mod_rss.feeds f JOIN mod_rss.poll_state p ON p.feed_id = f.id"""
    )
    return {r["url"]: dict(r) for r in rows}


def assert_backoff(st: dict[str, Any], errors: int) -> None:
    """Exponential backoff from the documented base, within the documented jitter."""
    delay = (st["next_poll_at"] - st["last_polled_at"]).total_seconds()
    expected = BACKOFF_BASE_S * 2 ** (errors - 1)
    assert expected * (1 - JITTER) - 1 <= delay <= expected * (1 + JITTER) + 1, (st["url"], delay)
    assert st["interval_reason"] == "error-backoff"


async def test_misbehaving_servers_are_recorded_and_backed_off_while_good_feeds_carry_on(
    host: Host, tmp_path: Path
) -> None:
    server_tls, _trusting_client = self_signed_tls(tmp_path)
    with FeedServer() as server, FeedServer(tls=server_tls) as tls_server:
        for path, route in bad_routes().items():
            server.route(path, route)
        for i in range(1, 40):  # longer than any redirect limit
            server.route(f"/r/{i}", Route(status=302, location=f"/r/{i + 1}"))
        server.route("/loop-b", Route(status=301, location="/loop"))
        tls_server.route("/feed", Route(body=BODY))
        future = format_datetime(datetime.now(UTC) + timedelta(days=365), usegmt=True)
        server.route("/good", Route(body=BODY, etag='"e0"'))
        server.route("/etag-churn", Route(body=BODY, etag='"c0"'))
        server.route("/future-lm", Route(body=BODY, last_modified=future))
        bad = {server.url(p): p for p in bad_routes()}
        bad[f"http://127.0.0.1:{free_port()}/refused"] = "refused"
        bad["http://feeds.example.invalid/rss"] = "dns"
        bad[tls_server.url("/feed", host="localhost")] = "tls"
        good = [server.url(p) for p in ("/good", "/etag-churn", "/future-lm")]
        async with host.require_pool().acquire() as conn:
            for url in [*bad, *good]:
                await store.add_feed(conn, url=url)

        for round_ in (1, 2, 3):
            server.route("/etag-churn", Route(body=BODY, etag=f'"c{round_}"'))  # a new ETag every time
            started = datetime.now(UTC)
            await poll_round(host)
            got = await states(host)
            for url, name in bad.items():
                st = got[url]
                assert st["consecutive_errors"] == round_ and st["successful_polls"] == 0, (name, st)
                assert st["last_error"] and st["entries"] == 0 and st["lease_until"] is None, name
                if name == "/429-retry-after":
                    delay = (st["next_poll_at"] - st["last_polled_at"]).total_seconds()
                    assert (
                        delay == pytest.approx(RETRY_AFTER_S, abs=1)
                        and st["interval_reason"] == "retry-after"
                    )
                else:
                    assert_backoff(st, round_)
            for url in good:
                st = got[url]
                assert st["last_success_at"] == st["last_polled_at"] > started, st
                assert st["consecutive_errors"] == 0, st
                assert st["entries"] == 3 and st["last_error"] is None
        assert tls_server.requests == []  # the handshake failed: no request was ever sent
        assert len(server.requests_to("/trickle")) == 3
        assert got[server.url("/future-lm")]["last_modified"] == future  # echoed back verbatim
        assert server.requests_to("/future-lm")[-1].headers["if-modified-since"] == future
        errors = {bad[u]: got[u]["last_error"] for u in bad}
        assert "redirect" in errors["/endless"].lower() and "redirect" in errors["/loop"].lower()
        assert errors["/500"].startswith("HTTP 500") and errors["/429"].startswith("HTTP 429")

    assert host.js is not None
    relay = outbox.Relay(host.require_pool(), host.js)
    while await relay.drain_once():
        pass
    assert len(await assert_exactly_once(host.require_pool(), host.js)) == 9  # 3 good feeds x 3 entries
