"""Subscription.start: where a new subscription begins (every retained event, new ones only, a window),
kept when the host starts again; `modules enable` says it."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import partial
from pathlib import Path

import asyncpg
import pytest
from nats.js import JetStreamContext
from nats.js.errors import NotFoundError

from host import module, streams
from host.errors import UserError
from host.events import Event, stable_uuid, subject
from host.module import EventHandler, Manifest, ModuleContext, ModuleSpec, ReceivedEvent, Subscription
from host.runtime import Host
from host.testing import make_host, publish_event, reset_stream, running, until

NAME = "starts"
STARTS = {"from_all": "all", "from_new": "new", "from_window": "2s"}


def handler(sub: str) -> EventHandler:
    async def handle(ctx: ModuleContext, conn: asyncpg.Connection, event: ReceivedEvent) -> None:
        await conn.execute("INSERT INTO mod_starts.seen (sub, n) VALUES ($1, $2)", sub, event.payload["n"])

    return handle


MODULE = ModuleSpec(
    manifest=Manifest(
        name=NAME,
        version="0",
        description="three subscriptions that start in three places",
        subscriptions=tuple(
            Subscription(name, subject(NAME, "tick"), handler(name), start=start)
            for name, start in STARTS.items()
        ),
        events=("tick",),
    )
)


def tick(n: int) -> Event:
    return Event(stable_uuid("tick", str(n)), subject(NAME, "tick"), {"type": "Tick", "n": n})


def with_module(tmp_path: Path, database_url: str, nats_url: str, home: str) -> Host:
    host = make_host(tmp_path / home, database_url, nats_url)
    host.specs[NAME] = MODULE  # as an installed plugin would be
    return host


async def seen(pool: asyncpg.Pool) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {name: [] for name in STARTS}
    for r in await pool.fetch("SELECT sub, n FROM mod_starts.seen ORDER BY n"):
        out[r["sub"]].append(r["n"])
    return out


async def consumers_exist(js: JetStreamContext) -> bool:
    """ "new" starts when the consumer is made: publishing before that would be before its start."""
    try:
        for name in STARTS:
            await js.consumer_info(streams.EVENTS, f"{NAME}_{name}")
    except NotFoundError:
        return False
    return True


async def heard(pool: asyncpg.Pool, n: int) -> dict[str, list[int]] | None:
    got = await seen(pool)
    return got if all(n in got[name] for name in STARTS) else None


@pytest.mark.timeout(600)
async def test_a_new_subscription_starts_where_it_declares_and_keeps_it_across_restarts(
    tmp_path: Path, database_url: str, nats_url: str
) -> None:
    await reset_stream(nats_url)
    first = with_module(tmp_path, database_url, nats_url, "first")
    await first.open()  # the streams exist (and the module's tables): an event is published before it runs
    try:
        assert first.js is not None
        await (await first.module_pool(NAME)).execute(  # as a migration would: the module's role owns it
            "CREATE SCHEMA mod_starts; CREATE TABLE mod_starts.seen (sub text, n int)"
        )
        await publish_event(first.js, tick(1))
        older = await first.js.get_last_msg(streams.EVENTS, subject(NAME, "tick"))
        stored = older.time
        assert stored is not None

        async def old_enough() -> bool:  # older than the 2 s window when the subscriptions start
            return (datetime.now(UTC) - stored).total_seconds() > 3

        await until(old_enough, what="tick 1 older than the window")
    finally:
        await first.close()

    for home, n in (("second", 2), ("third", 3)):  # the third start finds the consumers made by the second
        host = with_module(tmp_path, database_url, nats_url, home)
        async with running(host):
            js, pool = host.js, host.require_pool()
            assert js is not None
            await until(partial(consumers_exist, js), timeout=120, what="the subscriptions' consumers")
            await publish_event(js, tick(n))
            got = await until(
                partial(heard, pool, n), timeout=120, what=f"tick {n} heard by every subscription"
            )
            units = {u["name"]: u["state"] for u in (await host.health())["units"] if u["module"] == NAME}
            assert set(units.values()) == {"running"}, units
    assert got == {"from_all": [1, 2, 3], "from_new": [2, 3], "from_window": [2, 3]}


def test_start_positions_are_checked_and_enable_says_what_will_be_read() -> None:
    assert module.start_problem("new") is None and module.start_problem("7d") is None
    assert "is not" in (module.start_problem("yesterday") or "")
    bad = ModuleSpec(
        Manifest("bad", "0", "", subscriptions=(Subscription("s", "x.y", handler("s"), start="0d"),))
    )
    with pytest.raises(UserError, match="subscription s: start '0d'"):
        module.check(bad, "entry point bad", "bad")
    assert module.replay_plan(MODULE.manifest, 30) == [
        "subscription from_all (feedeater.starts.tick) first reads every event the bus retains (up to 30 days); "
        "afterwards it resumes where it stopped",
        "subscription from_new (feedeater.starts.tick) first reads only events published after it starts; "
        "afterwards it resumes where it stopped",
        "subscription from_window (feedeater.starts.tick) first reads the events of the last 2s and all after; "
        "afterwards it resumes where it stopped",
    ]
