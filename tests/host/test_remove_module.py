"""`feedeater modules remove`: after a module's distribution is uninstalled, status no longer reports it,
and removal deletes what the host kept for it (its data only with --drop-data)."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from host import streams
from host.events import iso_z, message_created, stable_uuid
from host.removal import owns_consumer
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

EXAMPLE_SRC = Path(__file__).resolve().parent.parent / "example_module"


def test_a_consumer_belongs_to_the_module_whose_name_is_its_longest_prefix() -> None:
    assert owns_consumer("rss_search", "rss", ["digest"])
    assert not owns_consumer("rss_extra_feed", "rss", ["rss_extra"])
    assert owns_consumer("rss_extra_feed", "rss_extra", ["rss"])
    assert not owns_consumer("digest_created", "dig", [])


@pytest.mark.timeout(600)
async def test_an_uninstalled_module_leaves_status_and_remove_deletes_what_was_kept(
    tmp_path: Path, database_url: str, nats_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLE_SRC))
    await reset_stream(nats_url)  # the session's NATS: earlier tests' events are not this one's
    with module_installed(tmp_path / "site", "example", "feedeater_example:MODULE"):
        host = make_host(tmp_path / "home", database_url, nats_url)
        async with running(host):
            assert host.js is not None
            pool = host.require_pool()
            await pool.execute(
                "INSERT INTO host.settings (module, key, value) VALUES ('example', 'work_ms', '5')"
            )
            message = {
                "id": str(stable_uuid("remove-test")),
                "createdAt": iso_z(datetime.now(UTC)),
                "source": {"module": "rss", "stream": "feed:1"},
                "tags": {"title": "hello"},
            }
            await publish_event(host.js, message_created("rss", message))
            await until(
                lambda: pool.fetchval("SELECT count(*) FROM mod_example.seen"), timeout=120, what="heard"
            )
            await until(
                lambda: pool.fetchval("SELECT count(*) FROM host.service_state WHERE module = 'example'"),
                what="its unit state saved",
            )
            heard = await pool.fetchval(
                "SELECT count(*) FROM host.processed_events WHERE consumer LIKE 'example.%'"
            )

    env = feedeater_env(tmp_path / "cli", database_url, nats_url)  # the example is not installed here

    def cli(*args: str) -> tuple[int, str, str]:
        res = feedeater(env, *args)
        return res.returncode, res.stdout, res.stderr

    code, out, err = await asyncio.to_thread(cli, "status", "--json")
    assert code == 0, err
    status = json.loads(out)
    assert "example" not in {m["name"] for m in status["modules"]}
    assert "example" not in {u["module"] for u in status["units"]}  # issue #23: it stayed "silent"

    code, _, err = await asyncio.to_thread(cli, "modules", "remove", "example")  # no terminal to ask on
    assert code == 2 and "pass --yes" in err

    code, out, err = await asyncio.to_thread(
        cli, "modules", "remove", "example", "--yes", "--drop-data", "--json"
    )
    assert code == 0, err
    removed = json.loads(out)
    assert removed["consumers"] == [f"{streams.SHARED}/example_entries"]
    assert removed["rows"]["processed_events"] == heard >= 1 and removed["rows"]["settings"] == 1
    assert removed["schema_dropped"] is True and removed["still_installed"] is False

    import asyncpg

    conn = await asyncpg.connect(database_url)
    try:
        assert await conn.fetchval("SELECT to_regnamespace('mod_example')") is None
        for sql in (
            "SELECT count(*) FROM host.settings WHERE module = 'example'",
            "SELECT count(*) FROM host.service_state WHERE module = 'example'",
            "SELECT count(*) FROM public.feedeater_migrations WHERE scope = 'example'",
            "SELECT count(*) FROM host.processed_events WHERE consumer LIKE 'example.%'",
        ):
            assert await conn.fetchval(sql) == 0, sql
        assert await conn.fetchval("SELECT count(*) FROM host.processed_events") > 0  # the others' stay
    finally:
        await conn.close()

    code, _, err = await asyncio.to_thread(cli, "modules", "remove", "example", "--yes")
    assert code == 2 and "no module 'example' is installed or has data here" in err
    code, _, err = await asyncio.to_thread(cli, "modules", "remove", "rss", "--yes")
    assert code == 2 and "module rss is still installed" in err
