"""feedeater beside FeedEater's own archiver on one NATS (issue #24): the archiver rewrites the stream
`feedeater_bus` to its two subjects whenever it starts. Before, that took `contextUpdated` away while
`feedeater run` published and the outbox relay stalled behind the first unroutable event."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import nats
import pytest
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig
from nats.js.errors import NotFoundError

from host import bus, outbox, streams
from host.runtime import Host
from host.services import EmbeddedNats
from host.testing import running
from tests import ticker
from tests.feedeater_archiver import Archiver
from tests.services import BusReader, feedeater, feedeater_env, make_host, until
from tests.ticker import assert_every_event_once, drained, published


@pytest.mark.parametrize("first", ["feedeater", "archiver"])
async def test_archiver_starting_while_we_publish_takes_no_subject_of_ours(
    first: str, tmp_path: Path, database_url: str, own_nats: EmbeddedNats
) -> None:
    url = own_nats.start()
    nc = await nats.connect(url)
    archiver = Archiver(nc)
    if first == "archiver":
        await archiver.start()  # FeedEater's worker ran before feedeater ever did
    host = make_host(tmp_path, database_url, url)
    ticker.install(host)
    try:
        async with running(host):
            contexts = "feedeater.ticker.contextUpdated"
            await until(lambda: published(host, contexts), what="contexts published", timeout=120)
            # The archiver (re)starts in the middle of publishing: FeedEater's worker (re)starting.
            before = await published(host, contexts)
            await archiver.stop()
            await archiver.start()
            info = await bus.stream_config(nc, streams.SHARED)
            assert info is not None and info["subjects"] == list(archiver.stream_config()["subjects"])
            await until(
                lambda: _more(host, contexts, before + 3), what="contexts still published after the archiver"
            )
            await ticker.stop(host)
            await until(lambda: drained(host), what="outbox drained", timeout=120)
            sent = await assert_every_event_once(host, nc)
            messages = {i for i, s in sent.items() if s.endswith(".messageCreated")}
            await until(lambda: _archived(archiver, messages), what="the archiver archived every message")
            assert archiver.unparsable == 0
            assert {s for s in sent.values()} == {
                "feedeater.ticker.messageCreated",
                "feedeater.ticker.contextUpdated",
                "feedeater.ticker.messageUpdated",
            }
            report = await host.health()
            assert report["status"] == "ok", report["degraded"]
    finally:
        await archiver.stop()
        await nc.close()


async def _more(host: Host, subject: str, count: int) -> bool:
    return await published(host, subject) >= count


async def _archived(archiver: Archiver, messages: set[str]) -> bool:
    return archiver.archived >= messages


async def test_a_subject_no_stream_takes_waits_alone_is_repaired_or_reported(
    tmp_path: Path, database_url: str, own_nats: EmbeddedNats
) -> None:
    """Someone narrows feedeater_events: the relay puts the subject back. Then a stranger's stream takes
    the subject: the repair cannot (JetStream refuses overlapping streams), so contextUpdated waits in
    the outbox, in order, and says so everywhere, while every other subject goes on publishing."""
    url = own_nats.start()
    nc = await nats.connect(url)
    host = make_host(tmp_path, database_url, url)
    ticker.install(host)
    contexts = "feedeater.ticker.contextUpdated"
    try:
        async with running(host):
            await until(lambda: published(host, contexts), what="contexts published", timeout=120)
            # 1. The subject is taken out of our stream: "no responders" → repaired, published again.
            narrowed = await bus.stream_config(nc, streams.EVENTS)
            assert narrowed is not None
            narrowed["subjects"] = [s for s in narrowed["subjects"] if s != "feedeater.*.contextUpdated"]
            await bus.api(nc, f"STREAM.UPDATE.{streams.EVENTS}", narrowed)
            before = await published(host, contexts)
            await until(lambda: _more(host, contexts, before + 2), what="contexts published after the repair")
            repaired = await bus.stream_config(nc, streams.EVENTS)
            assert repaired is not None and "feedeater.*.contextUpdated" in repaired["subjects"]
            # 2. A stranger's stream captures the subject: no repair possible.
            narrowed["subjects"] = repaired["subjects"]
            narrowed["subjects"].remove("feedeater.*.contextUpdated")
            await bus.api(nc, f"STREAM.UPDATE.{streams.EVENTS}", narrowed)
            await bus.api(
                nc,
                "STREAM.CREATE.stranger",
                {"name": "stranger", "subjects": [contexts], "storage": "memory"},
            )
            stalled = await until(lambda: _stalled(host, contexts), what="contexts reported as stalled")
            assert "another stream captures the subject" in stalled.error
            assert "stranger" in stalled.error and "repair failed" in stalled.error, stalled.error
            # Nothing waits behind it: messageCreated events written after the first stuck context go out.
            created = "feedeater.ticker.messageCreated"
            await until(lambda: _published_behind(host, contexts, created), what="messages published behind")
            await _assert_reported(host, contexts)
            # 3. The stranger's stream goes: the next retry repairs, the waiting contexts leave in order.
            await bus.api(nc, "STREAM.DELETE.stranger")
            await until(lambda: _no_stalled(host), what="stalled subjects cleared", timeout=120)
            await ticker.stop(host)
            await until(lambda: drained(host), what="outbox drained", timeout=120)
            await assert_every_event_once(host, nc)
            got = await BusReader(nc.jetstream(), stream=streams.EVENTS).all(contexts)
            order = await host.require_pool().fetch(
                "SELECT event_id::text FROM host.outbox WHERE subject = $1 ORDER BY id", contexts
            )
            assert [m["_msg_id"] for m in got] == [r["event_id"] for r in order], "contexts out of order"
    finally:
        await nc.close()


async def _stalled(host: Host, subject: str) -> outbox.Stalled | None:
    async with host.require_pool().acquire() as conn:
        st = await outbox.status(conn)
    return next((s for s in st.stalled if s.subject == subject and "stranger" in s.error), None)


async def _no_stalled(host: Host) -> bool:
    async with host.require_pool().acquire() as conn:
        return not (await outbox.status(conn)).stalled


async def _published_behind(host: Host, stuck: str, subject: str) -> bool:
    """Events of `subject` written after `stuck`'s oldest waiting event were published (twice over)."""
    return bool(
        await host.require_pool().fetchval(
            """SELECT count(*) >= 2 FROM host.outbox
               WHERE subject = $2 AND published_at IS NOT NULL
                 AND id > (SELECT min(id) FROM host.outbox WHERE subject = $1 AND published_at IS NULL)""",
            stuck,
            subject,
        )
    )


async def _assert_reported(host: Host, subject: str) -> None:
    """/healthz degraded with the reason, the console overview, the metric and `feedeater status`."""
    import httpx

    assert host.http_port is not None
    base = f"http://127.0.0.1:{host.http_port}"
    async with httpx.AsyncClient(timeout=30) as client:
        health = await client.get(f"{base}/healthz")
        assert health.status_code == 503
        reasons = [r for r in health.json()["degraded"] if subject in r]
        assert reasons and "another stream captures the subject" in reasons[0], health.json()
        page = await client.get(f"{base}/")
        assert "Not published" in page.text and subject in page.text
        metrics = await client.get(f"{base}/metrics")
    stalled = [
        line
        for line in metrics.text.splitlines()
        if line.startswith(f'feedeater_outbox_stalled{{subject="{subject}"}}')
    ]
    # The gauge is refreshed every 5 s by the relay: wait for it rather than for the clock.
    if not stalled:
        await until(lambda: _metric(base, subject), what="the stalled metric", timeout=30)
    env = feedeater_env(host.config.home, host.endpoints.database_url if host.endpoints else "", "")
    out = feedeater(env, "status", "--json")
    assert out.returncode == 0, out.stderr
    assert [s["subject"] for s in json.loads(out.stdout)["outbox"]["stalled"]] == [subject]
    text = feedeater(env, "status").stdout
    assert f"on {subject} not published since" in text and "another stream captures the subject" in text


async def _metric(base: str, subject: str) -> bool:
    import httpx

    async with httpx.AsyncClient(timeout=30) as client:
        text = (await client.get(f"{base}/metrics")).text
    return any(
        line.startswith(f'feedeater_outbox_stalled{{subject="{subject}"}} ') for line in text.splitlines()
    )


async def test_an_older_feedeaters_stream_is_split_and_its_consumers_read_to_the_end(
    tmp_path: Path, database_url: str, own_nats: EmbeddedNats
) -> None:
    """Before, every subject was in feedeater_bus and every subscription's durable consumer too. The new
    host moves its own subjects to feedeater_events; a subscription whose subject moved reads what its
    old consumer had not delivered yet, then deletes it and goes on in the new stream."""
    url = own_nats.start()
    nc = await nats.connect(url)
    js = nc.jetstream()
    old = ["feedeater.*.messageCreated", "feedeater.*.messageUpdated", "feedeater.*.contextUpdated"]
    await bus.api(nc, f"STREAM.CREATE.{streams.SHARED}", {"name": streams.SHARED, "subjects": old})
    for name, sub in (("revisions", "feedeater.ticker.messageUpdated"), ("everything", "feedeater.ticker.>")):
        await js.add_consumer(
            streams.SHARED,
            ConsumerConfig(durable_name=f"ticker_{name}", filter_subject=sub, ack_policy=AckPolicy.EXPLICIT),
        )
    waiting = ticker.events(1050)  # published by the old host, not handled yet: created, context, revision
    for event in waiting:
        await js.publish(event.subject, event.encode(), headers={"Nats-Msg-Id": str(event.event_id)})
    host = make_host(tmp_path, database_url, url)
    ticker.install(host)
    try:
        async with running(host):
            await until(lambda: _seen(host, "revisions", 3), what="revisions handled", timeout=120)
            emitted = await ticker.stop(host)
            await until(lambda: drained(host), what="outbox drained", timeout=120)
            shared = await bus.stream_config(nc, streams.SHARED)
            assert shared is not None and shared["subjects"] == [old[0], "feedeater.tags.appended"]
            await until(
                lambda: _gone(js, "ticker_revisions"), what="the old consumer read to the end, deleted"
            )
            await js.consumer_info(streams.EVENTS, "ticker_revisions")
            rows = await host.require_pool().fetch("SELECT event_id::text, subject FROM host.outbox")
            revisions = {r["event_id"] for r in rows if r["subject"].endswith(".messageUpdated")}
            revisions.add(str(waiting[2].event_id))
            everything = {r["event_id"] for r in rows} | {str(e.event_id) for e in waiting}
            await until(lambda: _seen(host, "everything", len(everything)), what="everything handled")
            seen = await host.require_pool().fetch("SELECT consumer, event_id FROM mod_ticker.seen")
            by = {
                c: Counter(r["event_id"] for r in seen if r["consumer"] == c)
                for c in ("revisions", "everything")
            }
            assert by["revisions"] == Counter(revisions) and by["everything"] == Counter(everything)
            assert emitted * 3 > len(rows) >= emitted
    finally:
        await nc.close()


async def _gone(js: JetStreamContext, durable: str) -> bool:
    try:
        await js.consumer_info(streams.SHARED, durable)
    except NotFoundError:
        return True
    return False


async def _seen(host: Host, consumer: str, count: int) -> bool:
    sql = "SELECT count(*) FROM mod_ticker.seen WHERE consumer = $1"
    return int(await host.require_pool().fetchval(sql, consumer)) >= count
