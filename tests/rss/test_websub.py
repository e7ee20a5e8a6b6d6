"""WebSub end to end: a real hub on loopback (tests/websubhub.py) verifies and pushes to the host's ASGI app
(the rss callback routes under uvicorn), with real PostgreSQL and JetStream behind it."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from host import outbox
from host.runtime import Host
from host.services import free_port
from host.web.app import build_app
from host.web.server import Served, serve
from modules.rss import cli as rss_cli
from modules.rss import store
from modules.rss.ingest.schedule import PUSH_REASON
from tests import websubhub
from tests.feedserver import FeedServer, Route, ago
from tests.services import BusReader, make_host, reset_stream, until
from tests.websubhub import Hub

DAY = 86400.0


def atom(entries: list[tuple[str, str, datetime]], *, links: str = "") -> bytes:
    """An Atom feed with extra feed-level `links` markup; entries are (id, title, updated)."""
    items = "".join(
        f"<entry><id>{i}</id><title>{t}</title><link href='http://example.org/{i}'/>"
        f"<updated>{d.isoformat()}</updated><content type='html'>&lt;p&gt;{t}&lt;/p&gt;</content></entry>"
        for i, t, d in entries
    )
    return (
        "<?xml version='1.0'?><feed xmlns='http://www.w3.org/2005/Atom'><title>Pushed</title>"
        f"<id>urn:x</id><updated>{ago(hours=1).isoformat()}</updated>{links}{items}</feed>"
    ).encode()


@dataclass
class Push:
    host: Host
    served: Served
    hub: Hub
    feeds: FeedServer
    bus: BusReader

    async def poll(self) -> dict[str, Any]:
        result = await self.host.run_job_once("rss.poll")
        assert result.status == "ok", result.error
        await self.drain()
        return dict(result.metrics)

    async def job(self, name: str) -> dict[str, Any]:
        result = await self.host.run_job_once(f"rss.{name}")
        assert result.status == "ok", result.error
        return dict(result.metrics)

    async def drain(self) -> None:
        assert self.host.js is not None
        await outbox.Relay(self.host.require_pool(), self.host.js).drain_all()

    async def sub(self, feed_id: int | None = None) -> dict[str, Any] | None:
        row = await self.host.require_pool().fetchrow(
            "SELECT * FROM mod_rss.websub WHERE feed_id IS NOT DISTINCT FROM $1", feed_id
        )
        return None if row is None else dict(row)

    async def poll_state(self, feed_id: int) -> dict[str, Any]:
        row = await self.host.require_pool().fetchrow(
            "SELECT * FROM mod_rss.poll_state WHERE feed_id = $1", feed_id
        )
        assert row is not None
        return dict(row)

    async def add(self, path: str) -> int:
        async with self.host.require_pool().acquire() as conn:
            row, _ = await store.add_feed(conn, url=self.feeds.url(path))
        return row.id

    async def until_state(self, feed_id: int | None, state: str | None) -> dict[str, Any] | None:
        """Wait for the subscription's state; "active" also waits for the hub to record the subscriber,
        which it does only once our answer to its verification reached it (after we stored "active")."""

        async def probe() -> Any:
            row = await self.sub(feed_id)
            if (
                state == "active"
                and row is not None
                and (row["callback"], row["topic"]) not in self.hub.subscribers
            ):
                return False
            return (row or {"state": None})["state"] == state and (row or True)

        return await until(probe, what=f"subscription {state}")  # type: ignore[no-any-return]

    async def publish(self, topic: str, body: bytes, **kw: Any) -> list[tuple[int, bytes]]:
        return await asyncio.to_thread(self.hub.publish, topic, body, **kw)

    async def entries(self, feed_id: int) -> list[str]:
        rows = await self.host.require_pool().fetch(
            "SELECT guid FROM mod_rss.entries WHERE feed_id = $1 ORDER BY guid", feed_id
        )
        return [r["guid"] for r in rows]

    async def make_due(self, feed_id: int) -> None:
        await self.host.require_pool().execute(
            "UPDATE mod_rss.poll_state SET next_poll_at = now() WHERE feed_id = $1", feed_id
        )


@pytest.fixture
async def push(
    tmp_path: Path, database_url: str, nats_url: str, feed_server: FeedServer
) -> AsyncIterator[Callable[..., Any]]:
    """Factory: a host whose callback routes are served on a free port (the public base URL), and a hub."""
    await reset_stream(nats_url)
    opened: list[tuple[Host, Served, Hub]] = []

    async def factory(*, http_hubs: bool = True, **hub_options: Any) -> Push:
        """`http_hubs`: the test hub speaks plain http, where the secret goes only when allowed."""
        port = free_port()
        env = {
            "FEEDEATER_RSS_WEBSUB_CALLBACK_BASE": f"http://127.0.0.1:{port}/",
            "FEEDEATER_RSS_WEBSUB_HTTP_HUBS": str(http_hubs).lower(),
        }
        host = make_host(tmp_path, database_url, nats_url, env=env)
        await host.open()
        ctx = await host.context("rss")
        routes = [(ctx, r) for r in host.specs["rss"].manifest.routes if not r.pages]
        app = await build_app(host.health, routes, version="test", pool=host.require_pool())
        served = await serve(app, "127.0.0.1", port)
        hub = Hub(**hub_options).start()
        opened.append((host, served, hub))
        assert host.js is not None
        return Push(host, served, hub, feed_server, BusReader(host.js))

    yield factory
    for host, served, hub in opened:
        hub.stop()
        await served.close()
        await host.close()


async def test_subscribe_verify_signed_push_and_rejected_pushes(push: Callable[..., Any]) -> None:
    p: Push = await push()
    topic = p.feeds.url("/topic")
    links = f"<link rel='hub' href='{p.hub.url}'/><link rel='self' href='{topic}'/>"
    p.feeds.route("/feed", Route(body=atom([("a", "Alpha", ago(hours=2))], links=links)))
    feed_id = await p.add("/feed")
    await p.poll()

    # Discovery from the feed: one subscribe request with our callback, a secret and the lease we asked for.
    [request] = p.hub.requests
    assert (request.mode, request.topic, request.lease_seconds) == ("subscribe", topic, 10 * 86400)
    assert request.callback.startswith(f"http://127.0.0.1:{p.served.port}/websub/") and request.secret
    sub = await p.until_state(feed_id, "active")
    assert sub is not None and sub["expires_at"] > datetime.now(UTC) + timedelta(days=9)
    assert sub["renew_at"] < sub["expires_at"]

    # A signed push: stored, announced on JetStream through the outbox, realtime.
    body = atom([("a", "Alpha", ago(hours=2)), ("b", "Beta", ago(minutes=1))], links=links)
    [(status, _)] = await p.publish(topic, body)
    assert status == 202 and await p.entries(feed_id) == ["a", "b"]
    await p.drain()
    created = await p.bus.all("feedeater.rss.messageCreated", expect=2)
    beta = next(e["message"] for e in created if e["message"]["rss"]["guid"] == "b")
    assert beta["realtime"] is True and beta["source"]["stream"] == str(feed_id)
    raw = await p.host.require_pool().fetchval(
        "SELECT count(*) FROM mod_rss.raw_fetches WHERE feed_id = $1 AND url = $2", feed_id, topic
    )
    assert raw == 1  # the push went through the raw store like a poll

    # Unsigned and wrongly signed pushes are acknowledged (WebSub §8) and dropped; so is an unknown method.
    evil = atom([("c", "Injected", ago(minutes=1))], links=links)
    for signing, method in (("none", "sha256"), ("wrong", "sha256"), ("wrong", "sha1"), ("wrong", "sha512")):
        [(status, reply)] = await p.publish(topic, evil, signing=signing, method=method)  # type: ignore[arg-type]
        assert status == 202 and b"ignored" in reply
    assert await p.entries(feed_id) == ["a", "b"]
    await p.drain()
    assert len(await p.bus.all("feedeater.rss.messageCreated")) == 2
    sub = await p.sub(feed_id)
    assert sub is not None and (sub["pushes"], sub["rejected_pushes"]) == (1, 4)
    # Every allowed method signs validly.
    for n, method in enumerate(("sha1", "sha384", "sha512")):
        body = atom([(f"m{n}", method, ago(minutes=1))], links=links)
        [(status, _)] = await p.publish(topic, body, method=method)
        assert status == 202
    assert await p.entries(feed_id) == ["a", "b", "m0", "m1", "m2"]

    # Verification requests must name our topic and a mode we asked for; unknown callbacks are 404.
    callback = request.callback
    assert await asyncio.to_thread(p.hub.verify_intent, callback, "subscribe", topic + "x") == (404, False)
    assert await asyncio.to_thread(p.hub.verify_intent, callback, "unsubscribe", topic) == (404, False)
    assert await asyncio.to_thread(p.hub.verify_intent, callback + "nope", "subscribe", topic) == (404, False)
    assert (await p.sub(feed_id) or {}).get("state") == "active"

    # While active, polling drops to a daily safety check; the learned interval is kept.
    await p.make_due(feed_id)
    before = datetime.now(UTC)
    await p.poll()
    st = await p.poll_state(feed_id)
    assert st["interval_reason"].endswith(PUSH_REASON)
    assert st["next_poll_at"] >= before + timedelta(seconds=DAY - 60)
    assert st["interval_s"] < DAY

    # Renewal before the lease ends: the hub is asked again and re-verifies, extending the lease.
    old = await p.sub(feed_id)
    assert old is not None
    await p.host.require_pool().execute(
        "UPDATE mod_rss.websub SET renew_at = now() - interval '1 s', expires_at = now() + interval '1 h' WHERE id = $1",
        old["id"],
    )
    metrics = await p.job("websub")
    assert metrics["renewed"] == 1
    assert [r.mode for r in p.hub.requests] == ["subscribe", "subscribe"]
    assert p.hub.requests[1].callback == callback and p.hub.requests[1].secret == request.secret

    async def extended() -> bool:
        row = await p.sub(feed_id)
        return row is not None and row["expires_at"] > datetime.now(UTC) + timedelta(days=9)

    await until(extended, what="lease extended by the renewal")

    shown, show_text = await rss_cli._show(p.host, argparse.Namespace(feed=str(feed_id)))
    assert "secret" not in shown["websub"] and shown["websub"]["pushes"] == 4
    assert f"push:         WebSub active at {p.hub.url} until " in show_text(shown)

    # `rss remove` unsubscribes at the hub; the hub's unsubscribe check is confirmed and the row goes.
    pool = p.host.require_pool()
    await rss_cli._remove(p.host, argparse.Namespace(feeds=[str(feed_id)]))
    assert p.hub.requests[-1].mode == "unsubscribe" and p.hub.requests[-1].topic == topic
    assert p.hub.requests[-1].callback == callback
    await until(lambda: pool.fetchval("SELECT count(*) = 0 FROM mod_rss.websub"), what="unsubscribe verified")
    assert not p.hub.subscribers
    status, _ = await asyncio.to_thread(
        websubhub.request, "POST", callback, body=body
    )  # a late push: unknown now
    assert status == 404


async def test_the_secret_is_never_sent_to_an_http_hub(push: Callable[..., Any]) -> None:
    """WebSub §5.1: hub.secret only over https. By default a feed whose hub is http:// is polled as
    before: no request reaches the hub, nothing is stored; a subscription stored while http hubs were
    allowed is not renewed once they are not (its lease runs out, then polling resumes)."""
    p: Push = await push(http_hubs=False)
    links = f"<link rel='hub' href='{p.hub.url}'/>"
    p.feeds.route("/feed", Route(body=atom([("a", "Alpha", ago(hours=2))], links=links)))
    feed_id = await p.add("/feed")
    await p.poll()
    assert p.hub.requests == [] and await p.sub(feed_id) is None
    assert await p.entries(feed_id) == ["a"]

    allowed: Push = await push(http_hubs=True)
    allowed.feeds.route("/feed2", Route(body=atom([("b", "Beta", ago(hours=2))], links=links)))
    other = await allowed.add("/feed2")
    await allowed.poll()
    assert [r.mode for r in p.hub.requests] == ["subscribe"]  # the same hub, now allowed
    await p.until_state(other, "active")  # p.hub is the hub both feeds name
    await p.host.require_pool().execute("UPDATE mod_rss.websub SET renew_at = now() - interval '1 minute'")
    await p.job("websub")  # the host that does not allow http hubs renews the shared row
    assert [r.mode for r in p.hub.requests] == ["subscribe"]
    sub = await p.sub(other)
    assert sub is not None and "not https" in (sub["last_error"] or "")


async def test_discovery_from_link_header_and_fallback_when_the_hub_fails(push: Callable[..., Any]) -> None:
    p: Push = await push()
    self_url = p.feeds.url("/canonical")
    header = f'<{p.hub.url}>; rel="hub", <{self_url}>; rel="self"'
    # The document names another self: the Link header wins (WebSub §4).
    links = f"<link rel='self' href='{p.feeds.url('/other')}'/>"
    p.feeds.route(
        "/feed", Route(body=atom([("a", "A", ago(hours=3))], links=links), headers={"Link": header})
    )
    feed_id = await p.add("/feed")
    await p.poll()
    assert [(r.mode, r.topic) for r in p.hub.requests] == [("subscribe", self_url)]
    await p.until_state(feed_id, "active")

    # The lease lapses (no renewal arrived): the websub job falls back to polling at once.
    await p.make_due(feed_id)
    await p.poll()
    assert (await p.poll_state(feed_id))["interval_reason"].endswith(PUSH_REASON)
    await p.host.require_pool().execute("UPDATE mod_rss.websub SET expires_at = now() - interval '1 s'")
    assert (await p.job("websub"))["lapsed"] == 1
    st = await p.poll_state(feed_id)
    assert st["next_poll_at"] <= datetime.now(UTC)
    await p.poll()
    st = await p.poll_state(feed_id)
    assert PUSH_REASON not in st["interval_reason"]
    assert st["next_poll_at"] < datetime.now(UTC) + timedelta(hours=2)  # normal cadence again
    assert (await p.sub(feed_id) or {})["state"] == "failed"
    assert len(p.hub.requests) == 1  # a failed hub is not asked again before websub_retry_hours


async def test_refused_and_never_verified_subscriptions_leave_polling_alone(push: Callable[..., Any]) -> None:
    refusing: Push = await push(answer=400)
    refusing.feeds.route(
        "/r",
        Route(body=atom([("a", "A", ago(hours=3))], links=f"<link rel='hub' href='{refusing.hub.url}'/>")),
    )
    refused = await refusing.add("/r")
    await refusing.poll()
    sub = await refusing.sub(refused)
    assert sub is not None and sub["state"] == "failed" and "400" in sub["last_error"]
    assert PUSH_REASON not in (await refusing.poll_state(refused))["interval_reason"]

    silent = Hub(verify=False).start()
    try:
        refusing.feeds.route(
            "/s", Route(body=atom([("a", "A", ago(hours=3))], links=f"<link rel='hub' href='{silent.url}'/>"))
        )
        quiet = await refusing.add("/s")
        await refusing.poll()
        assert (await refusing.sub(quiet) or {})["state"] == "pending"
        assert (await refusing.job("websub"))["never_verified"] == 0  # still inside the verification window
        await refusing.host.require_pool().execute(
            "UPDATE mod_rss.websub SET requested_at = now() - interval '1 hour' WHERE feed_id = $1", quiet
        )
        assert (await refusing.job("websub"))["never_verified"] == 1
        sub = await refusing.sub(quiet)
        assert sub is not None and sub["state"] == "failed" and "never verified" in sub["last_error"]
        assert (await refusing.poll_state(quiet))["next_poll_at"] <= datetime.now(UTC)

        # A hub may deny a pending subscription at the callback (WebSub §5.2): failed, polled at once.
        refusing.feeds.route(
            "/d", Route(body=atom([("a", "A", ago(hours=3))], links=f"<link rel='hub' href='{silent.url}'/>"))
        )
        denied = await refusing.add("/d")
        await refusing.poll()
        callback = silent.requests[-1].callback
        await refusing.host.require_pool().execute(
            "UPDATE mod_rss.poll_state SET next_poll_at = now() + interval '1 hour' WHERE feed_id = $1",
            denied,
        )
        topic = refusing.feeds.url("/d")
        assert await asyncio.to_thread(silent.verify_intent, callback, "denied", topic) == (200, False)
        sub = await refusing.sub(denied)
        assert sub is not None and sub["state"] == "failed" and "not allowed here" in sub["last_error"]
        assert (await refusing.poll_state(denied))["next_poll_at"] <= datetime.now(UTC)
    finally:
        silent.stop()
