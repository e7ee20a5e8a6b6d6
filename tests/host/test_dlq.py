"""Dead letters: `feedeater bus dlq list|show|replay|purge` over what a failing subscription parked, and a
replay that handles each event exactly once, also when it is interrupted after its commit."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import asyncpg
import httpx
import nats
import pytest
from nats.js import JetStreamContext
from nats.js.errors import NotFoundError

from host import bus, dlq, streams, tokens
from host.events import Event, stable_uuid, subject
from host.module import Manifest, ModuleContext, ModuleSpec, ReceivedEvent, Subscription
from host.testing import (
    feedeater,
    feedeater_env,
    make_host,
    module_installed,
    publish_event,
    reset_stream,
    running,
    until,
)

NAME = "flaky"


async def on_ping(ctx: ModuleContext, conn: asyncpg.Connection, event: ReceivedEvent) -> None:
    """Fails while the switch says so (a table: the CLI's replays run in other processes)."""
    if await conn.fetchval("SELECT fail FROM mod_flaky.switch"):
        raise RuntimeError(f"ping {event.payload['n']} refused")
    await conn.execute("INSERT INTO mod_flaky.seen (event_id) VALUES ($1)", event.event_id)


MODULE = ModuleSpec(
    manifest=Manifest(
        name=NAME,
        version="0",
        description="fails on demand",
        subscriptions=(Subscription("pings", subject(NAME, "ping"), on_ping, max_deliver=1),),
        events=("ping",),
    )
)


def ping(n: int) -> Event:
    return Event(stable_uuid("ping", str(n)), subject(NAME, "ping"), {"type": "Ping", "n": n})


@pytest.mark.timeout(600)
async def test_dead_letters_are_listed_replayed_exactly_once_and_purged(
    tmp_path: Path, database_url: str, nats_url: str
) -> None:
    await reset_stream(nats_url)  # the session's NATS: earlier tests' events and dead letters are not ours
    with module_installed(tmp_path / "site", NAME, "tests.host.test_dlq:MODULE") as pythonpath:
        host = make_host(tmp_path / "home", database_url, nats_url)
        env = feedeater_env(tmp_path / "cli", database_url, nats_url, PYTHONPATH=pythonpath)

        async def cli(*args: str) -> object:
            res = await asyncio.to_thread(feedeater, env, *args, "--json")
            assert res.returncode == 0, res.stderr
            return json.loads(res.stdout)

        async with running(host):
            js = host.js
            assert js is not None
            pool = host.require_pool()
            await (await host.module_pool(NAME)).execute(  # as a migration would: the module's role owns them
                """CREATE SCHEMA mod_flaky; CREATE TABLE mod_flaky.seen (event_id text);
                   CREATE TABLE mod_flaky.switch (fail bool); INSERT INTO mod_flaky.switch VALUES (true)"""
            )
            for n in (1, 2):
                await publish_event(js, ping(n))
            await until(lambda: _count_is(js, 2), timeout=120, what="both pings dead-lettered")

            listed = await cli("bus", "dlq", "list")
            assert isinstance(listed, list)
            assert [(d["module"], d["subscription"], d["event_id"]) for d in listed] == [
                (NAME, "pings", str(ping(n).event_id)) for n in (1, 2)
            ]
            assert listed[0]["reason"] == "RuntimeError: ping 1 refused" and listed[0]["deliveries"] == 1
            shown = await cli("bus", "dlq", "show", str(listed[1]["seq"]))
            assert isinstance(shown, dict) and shown["payload"] == {"type": "Ping", "n": 2}
            status = await cli("status")
            assert isinstance(status, dict) and status["dead_letters"] == 2

            await pool.execute("UPDATE mod_flaky.switch SET fail = false")  # the cause is fixed
            assert await cli("bus", "dlq", "replay", str(listed[0]["seq"])) == [
                {"seq": listed[0]["seq"], "event_id": str(ping(1).event_id), "handled": True}
            ]
            # A replay interrupted between its commit and the deletion of the dead letter ...
            with pytest.MonkeyPatch.context() as patch:

                async def crash(*_args: object) -> None:
                    raise Crash

                patch.setattr(dlq, "delete", crash)
                with pytest.raises(Crash):
                    await dlq.replay(js, listed[1]["seq"], host.specs, host.context)
            # ... is finished by the next one, which does not handle the event again.
            assert await cli("bus", "dlq", "replay") == [
                {"seq": listed[1]["seq"], "event_id": str(ping(2).event_id), "handled": False}
            ]
            seen = [r["event_id"] for r in await pool.fetch("SELECT event_id FROM mod_flaky.seen ORDER BY 1")]
            assert sorted(seen) == sorted(str(ping(n).event_id) for n in (1, 2))  # each exactly once
            assert await cli("bus", "dlq", "list") == []

            await pool.execute("UPDATE mod_flaky.switch SET fail = true")
            for n in (3, 4):
                await publish_event(js, ping(n))
            await until(lambda: _count_is(js, 2), timeout=120, what="two more pings dead-lettered")
            async with pool.acquire() as conn:
                token = (await tokens.create(conn, "tests"))["token"]
            async with httpx.AsyncClient(
                base_url=f"http://127.0.0.1:{host.http_port}/api/v1",
                headers={"Authorization": f"Bearer {token}"},
                timeout=30,
            ) as api:
                got = (await api.get("/dlq", params={"module": NAME})).json()
                assert got["total"] == 2 and [d["event_id"] for d in got["items"]] == [
                    str(ping(n).event_id) for n in (3, 4)
                ]
                third = got["items"][0]["seq"]
                assert (await api.get(f"/dlq/{third}")).json()["payload"] == {"type": "Ping", "n": 3}
                assert (await api.delete(f"/dlq/{third}")).json() == {"deleted": 1}
                assert (await api.get(f"/dlq/{third}")).status_code == 404
            assert await cli("bus", "dlq", "purge", "--module", NAME, "--yes") == {"deleted": 1}
            assert await dlq.count(js) == 0
            assert (
                await pool.fetchval("SELECT count(*) FROM mod_flaky.seen") == 2
            )  # nothing deleted was handled


class Crash(Exception):
    """Stands in for the process dying after the replay committed."""


async def _count_is(js: JetStreamContext, n: int) -> bool:
    return await dlq.count(js) == n


async def test_reset_stream_leaves_no_dead_letter_to_the_next_test(nats_url: str) -> None:
    nc = await nats.connect(nats_url)
    try:
        await bus.ensure_streams(nc, streams.plan(()), bus.BusLimits())
        js = nc.jetstream()
        await js.publish(dlq.filter_subject(NAME, "pings"), b"{}", stream=streams.DLQ)
        assert (await js.stream_info(streams.DLQ)).state.messages >= 1
        await reset_stream(nats_url)
        for name in (*streams.BUS_STREAMS, streams.DLQ):
            with pytest.raises(NotFoundError):
                await js.stream_info(name)
    finally:
        await nc.close()
