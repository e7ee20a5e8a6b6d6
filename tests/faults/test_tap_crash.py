"""The NDJSON tap across SIGKILL: a real `feedeater run` killed mid-stream and restarted leaves every
entry event in the files exactly once (no duplicate, no missing, no truncated line) and each raw blob."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import asyncpg
import pytest

from modules.rss import store
from tests.feedserver import FeedServer, Route, ago, rss
from tests.services import HostProcess, make_host, module_installed, reset_stream, until

ENTRIES = (
    600  # one transaction and one fsync per line: the tap needs seconds for these, the kill lands mid-stream
)
NEVER = "0 0 1 1 *"  # the embedding model and the other jobs would only compete for the 2 cores
RUN_ENV = {
    "FEEDEATER_JOB_RSS_POLL": "1s",
    "FEEDEATER_RSS_PARSE_WORKERS": "0",
    **{f"FEEDEATER_JOB_RSS_{job}": NEVER for job in ("EMBED", "UPDATECONTEXTS", "FULLTEXT")},
}


async def tapped(pool: asyncpg.Pool) -> int:
    return int(
        await pool.fetchval("SELECT count(*) FROM host.processed_events WHERE consumer = 'tap.created'")
    )


@pytest.mark.timeout(600)
async def test_a_killed_tap_resumes_and_writes_every_event_exactly_once(
    tmp_path: Path, database_url: str, nats_url: str
) -> None:
    await reset_stream(nats_url)
    out = tmp_path / "out"
    hosts: list[HostProcess] = []
    with module_installed(tmp_path / "site", "tap", "modules.tap:MODULE") as pythonpath:
        env = {**RUN_ENV, "PYTHONPATH": pythonpath, "FEEDEATER_TAP_DIRECTORY": str(out)}
        setup = make_host(tmp_path / "setup", database_url, nats_url)
        await setup.open(with_bus=False)  # migrations (rss, tap) before any host runs
    pool = setup.require_pool()
    body = rss([(f"g{i}", f"entry {i}", ago(days=1), "x") for i in range(ENTRIES)])
    try:
        await setup.set_enabled("tap", True)
        for other in ("digest", "discord"):  # their subscriptions would compete for the same events
            await setup.set_enabled(other, False)
        with FeedServer() as server:
            server.route("/big", Route(body=body))
            async with pool.acquire() as conn:
                await store.add_feed(conn, url=server.url("/big"))
            hosts.append(HostProcess(tmp_path / "a", database_url, nats_url, "tap-a", **env))
            await until(lambda: tapped(pool), timeout=120, interval=0.01, what="the tap writing")
            hosts[0].kill()  # mid-stream, possibly between a write and its commit
            left = ENTRIES - await tapped(pool)
            assert left > 0, "the kill came after the tap had finished"
            hosts.append(HostProcess(tmp_path / "b", database_url, nats_url, "tap-b", **env))

            async def all_tapped() -> bool:
                return await tapped(pool) == ENTRIES

            await until(all_tapped, timeout=300, what="every event tapped after the restart")
            hosts[1].stop()
        events = await pool.fetch(
            "SELECT event_id FROM host.outbox WHERE subject = 'feedeater.rss.messageCreated'"
        )
        day = datetime.now(UTC).date().isoformat()
        raw = (out / "entries" / f"{day}.ndjson").read_bytes()
        assert raw.endswith(b"\n"), "a truncated last line"
        got = [json.loads(line) for line in raw.decode().split("\n")[:-1]]
        ids = [g["eventId"] for g in got]
        assert len(ids) == len(set(ids)) == ENTRIES, "a duplicate line"
        assert set(ids) == {str(e["event_id"]) for e in events}
        committed = await pool.fetchval("SELECT committed FROM mod_tap.files WHERE kind = 'lines'")
        assert committed == len(raw)
        fetch_id = got[0]["message"]["rss"]["fetchId"]
        assert (out / "raw" / day / f"{fetch_id}.blob").read_bytes() == body
        print(f"killed with {left} of {ENTRIES} events still to tap")
    finally:
        for h in hosts:
            h.stop()
            print(f"---- {h.host_id} ----\n{h.output()[-4000:]}")
        await setup.close()
