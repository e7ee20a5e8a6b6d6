"""`feedeater modules remove`: after a module's distribution is uninstalled, status no longer reports it,
and removal deletes what the host kept for it (its data only with --drop-data)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from host import streams
from host.cli import _removed_text
from host.events import iso_z, message_created, stable_uuid
from host.removal import Removed, owns_consumer
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


def test_the_removal_report_names_the_schemas_dropped_and_the_role_kept() -> None:
    result = Removed("example", schema_dropped=True, public_schema_dropped=True)
    result.role_revoked, result.role_objects_left = "feedeater_mod_example", 2
    first, role = _removed_text(dataclasses.asdict(result)).splitlines()
    assert first.endswith("; schema mod_example dropped; schema example_public dropped")
    assert role.startswith("role feedeater_mod_example kept (roles are cluster-wide")
    assert role.endswith("this database's grants to it revoked, 2 of its objects here left")


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
            async with pool.acquire() as conn, conn.transaction():  # public views, made as a module does
                await conn.execute("SET LOCAL ROLE feedeater_mod_example")
                await conn.execute(
                    "CREATE SCHEMA example_public; "
                    "CREATE VIEW example_public.seen AS SELECT * FROM mod_example.seen"
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
    assert removed["public_schema_dropped"] is True
    assert removed["role_revoked"] == "feedeater_mod_example" and removed["role_objects_left"] == 0

    import asyncpg

    conn = await asyncpg.connect(database_url)
    try:
        assert await conn.fetchval("SELECT to_regnamespace('mod_example')") is None
        assert await conn.fetchval("SELECT to_regnamespace('example_public')") is None
        # The role is the same name in every database of the cluster (other test databases use it): it
        # stays, with nothing of this database granted to it or owned by it.
        assert await conn.fetchval("SELECT to_regrole('feedeater_mod_example')") is not None
        assert not await conn.fetchval(
            "SELECT has_database_privilege('feedeater_mod_example', current_database(), 'CREATE')"
        )
        assert not await conn.fetchval(
            """SELECT count(*) FROM pg_shdepend WHERE refobjid = 'feedeater_mod_example'::regrole
               AND dbid = (SELECT oid FROM pg_database WHERE datname = current_database())"""
        )
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
