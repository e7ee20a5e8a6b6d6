"""Settings on the second day (issue #20): validated when set, reset to the default, applied by running
hosts within seconds (or named as needing a restart), reported by `settings set`, `status` and /healthz."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg
import httpx
import nats
import pytest

from host import db, livesettings
from host.module import Manifest, Setting
from host.services import free_port
from host.streams import BUS_STREAMS
from modules.rss import store
from tests.feedserver import FeedServer, Route, ago, rss
from tests.host.test_cli import assert_one_line_error
from tests.services import HostProcess, feedeater, feedeater_env, health, until

PRIVATE = "FEEDEATER_RSS_ALLOW_PRIVATE_NETWORKS"


# -- decisions (pure) ------------------------------------------------------------------------------
MANIFEST = Manifest(
    name="demo",
    version="1",
    description="",
    settings=(
        Setting("rate", "int", 1, ""),
        Setting("token", "str", "", "", applies="services"),
        Setting("directory", "str", "", "", applies="restart"),
    ),
)


def test_a_change_applies_live_by_restarting_services_or_at_the_next_start() -> None:
    running = {"rate": 1, "token": "", "directory": "/a"}
    plan = livesettings.plan(MANIFEST, running, {"rate": 2, "token": "t", "directory": "/b"})
    assert plan.live == {"rate"} and plan.services == {"token"} and plan.restart == {"directory"}
    assert plan.values == {"rate": 2, "token": "t", "directory": "/a"}  # this process keeps its directory
    back = livesettings.plan(MANIFEST, plan.values, {"rate": 2, "token": "t", "directory": "/a"})
    assert not (back.live or back.services or back.restart)  # changed back: no restart needed any more


def test_each_running_host_says_how_it_stands_with_a_change() -> None:
    at = datetime(2026, 1, 1, tzinfo=UTC)
    row = {
        "host_id": "a",
        "settings_at": at,
        "restart_needed": [],
        "env_overrides": [],
        "settings_error": None,
    }
    assert livesettings.verdict(row, "rss.x", at).verdict == "applied"
    assert livesettings.verdict(row, "rss.x", at + timedelta(seconds=1)).verdict == "unconfirmed"
    assert livesettings.verdict({**row, "restart_needed": ["rss.x"]}, "rss.x", at).verdict == "restart"
    env = livesettings.verdict({**row, "env_overrides": ["rss.x"]}, "rss.x", at)
    assert (env.verdict, env.detail) == ("environment", "FEEDEATER_RSS_X")
    reports = [
        livesettings.HostReport("a", "applied"),
        livesettings.HostReport("b", "restart"),
        livesettings.HostReport("c", "environment", "FEEDEATER_RSS_X"),
    ]
    assert livesettings.describe(reports) == (
        "applied by host a; host b must restart to apply it (stop and start `feedeater run`); "
        "host c keeps FEEDEATER_RSS_X from its environment (unset it there)"
    )
    assert "no host is running" in livesettings.describe([])


# -- validated when set, reset to the default (item 8) ----------------------------------------------
@pytest.fixture
def cli_env(tmp_path: Path, database_url: str, nats_url: str) -> dict[str, str]:
    return feedeater_env(tmp_path, database_url, nats_url)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("digest.timezone", "Mars/Olympus", "'Mars/Olympus' is not an IANA time zone"),
        ("digest.timezone", "", "must not be empty"),
        ("digest.morning_time", "25:99", "'25:99' is not a time of day"),
        ("digest.schedule", "morning,brunch", "unknown 'brunch'"),
        ("rss.openai_base_url", "not-a-url", "'not-a-url' is not a http or https URL"),
        ("discord.gateway_url", "https://gateway.discord.gg/", "is not a wss or ws URL"),
        ("rss.user_agent", "  ", "must not be empty"),
    ],
)
def test_a_bad_value_is_refused_when_set_and_nothing_is_stored(
    cli_env: dict[str, str], key: str, value: str, message: str
) -> None:
    assert_one_line_error(feedeater(cli_env, "settings", "set", key, value), f"bad value for {key}", message)
    got = json.loads(feedeater(cli_env, "settings", "get", key, "--json").stdout)
    assert got[0]["value"] == next(s for s in _manifest(key).settings if s.key == got[0]["key"]).default


def _manifest(qualified: str) -> Manifest:
    from host.module import discover

    return discover()[qualified.partition(".")[0]].manifest


async def test_reset_returns_to_the_default_and_a_bad_stored_value_says_how_to_fix_it(
    cli_env: dict[str, str], database_url: str
) -> None:
    ok = await asyncio.to_thread(feedeater, cli_env, "settings", "set", "digest.timezone", "Europe/Berlin")
    assert ok.returncode == 0 and 'digest.timezone = "Europe/Berlin"' in ok.stdout, ok
    reset = await asyncio.to_thread(feedeater, cli_env, "settings", "reset", "digest.timezone")
    assert reset.returncode == 0 and 'digest.timezone = "UTC" (the default)' in reset.stdout, reset
    again = await asyncio.to_thread(feedeater, cli_env, "settings", "reset", "digest.timezone")
    assert_one_line_error(again, "digest.timezone has no stored value")
    # A value stored before validation existed (or by hand) names itself and the fix.
    conn = await asyncpg.connect(database_url)
    try:
        await conn.execute(
            "INSERT INTO host.settings (module, key, value) VALUES ('digest', 'timezone', '\"Mars/Olympus\"')"
        )
    finally:
        await conn.close()
    bad = await asyncio.to_thread(feedeater, cli_env, "settings", "get", "digest")
    assert_one_line_error(
        bad, "bad value for digest.timezone (stored)", "feedeater settings reset digest.timezone"
    )
    assert (
        await asyncio.to_thread(feedeater, cli_env, "settings", "reset", "digest.timezone")
    ).returncode == 0
    assert (await asyncio.to_thread(feedeater, cli_env, "settings", "get", "digest")).returncode == 0


# -- a running host applies changes (item 2) --------------------------------------------------------
async def _blocked(pool: asyncpg.Pool, feed_id: int) -> bool:
    error = await pool.fetchval("SELECT last_error FROM mod_rss.poll_state WHERE feed_id = $1", feed_id)
    return bool(error and error.startswith("blocked: address"))


async def _entries(pool: asyncpg.Pool, feed_id: int) -> int:
    return int(await pool.fetchval("SELECT count(*) FROM mod_rss.entries WHERE feed_id = $1", feed_id))


async def _restart_required(port: int) -> list[str] | None:
    got = await health(port)
    return None if got is None else list(got[1]["restart_required"])


@pytest.mark.timeout(900)  # waits for conditions with generous deadlines; a busy machine is slow
async def test_a_running_host_applies_settings_set_within_seconds(
    tmp_path: Path, database_url: str, nats_url: str
) -> None:
    """The issue's second day: `settings set rss.allow_private_networks true` (the fix the refusal names)
    reached `rss add` but not the running host, which kept refusing its feeds until restarted."""
    env = feedeater_env(tmp_path / "cli", database_url, nats_url, unset=[PRIVATE])
    assert (await asyncio.to_thread(feedeater, env, "migrate")).returncode == 0
    pool = await db.create_pool(database_url, max_size=2)  # the test's own view of the database
    port = free_port()
    proc: HostProcess | None = None
    try:
        with FeedServer() as server:
            server.route(
                "/feed", Route(body=rss([("a", "A", ago(hours=1), "x"), ("b", "B", ago(hours=2), "y")]))
            )
            server.route("/later", Route(body=rss([("c", "C", ago(hours=1), "z")])))
            refused = await asyncio.to_thread(feedeater, env, "rss", "add", server.url("/later"))
            assert_one_line_error(refused, "settings set rss.allow_private_networks true")
            async with pool.acquire() as conn:  # as an OPML import added them before the setting changed
                feed, _ = await store.add_feed(conn, url=server.url("/feed"))
            proc = HostProcess(
                tmp_path / "h",
                database_url,
                nats_url,
                "live-1",
                unset=[PRIVATE],
                FEEDEATER_HTTP_PORT=str(port),
                FEEDEATER_JOB_RSS_POLL="1s",
                FEEDEATER_RSS_PARSE_WORKERS="0",
                FEEDEATER_RSS_RAW_KEEP="3",
            )
            await until(lambda: _blocked(pool, feed.id), timeout=300, what="the host refuses the feed")
            await until(lambda: health(port), timeout=120, what="/healthz answers")

            res = await asyncio.to_thread(
                feedeater, env, "settings", "set", "rss.allow_private_networks", "true"
            )
            assert res.returncode == 0, res.stderr
            assert "rss.allow_private_networks = true; applied by host live-1" in res.stdout, res.stdout
            # The refused feed is polled again at once (not after its error backoff) and read.
            await until(lambda: _entries(pool, feed.id), timeout=120, what="the feed read after the change")
            added = await asyncio.to_thread(feedeater, env, "rss", "add", server.url("/later"), "--json")
            assert added.returncode == 0, added.stderr
            later = json.loads(added.stdout)["id"]
            token = json.loads(
                (await asyncio.to_thread(feedeater, env, "api", "token", "create", "--json")).stdout
            )["token"]
            async with httpx.AsyncClient(timeout=120) as client:
                got = await client.post(
                    f"http://127.0.0.1:{port}/api/v1/feeds/{later}/refetch",
                    headers={"Authorization": f"Bearer {token}"},
                )
            assert got.status_code == 200 and got.json()["failed"] == {}, got.text  # the host fetched it

            # A setting only a new process applies: named by `settings set`, /healthz and `status`.
            res = await asyncio.to_thread(
                feedeater, env, "settings", "set", "host.otlp_endpoint", "http://127.0.0.1:4318"
            )
            assert "host live-1 must restart to apply it" in res.stdout, res
            assert json.loads(
                (
                    await asyncio.to_thread(
                        feedeater,
                        env,
                        "settings",
                        "set",
                        "host.otlp_endpoint",
                        "http://127.0.0.1:4318",
                        "--json",
                    )
                ).stdout
            )["restart_required"] == ["live-1"]
            assert await _restart_required(port) == ["host.otlp_endpoint"]
            status = await asyncio.to_thread(feedeater, env, "status")
            assert "host live-1: running since" in status.stdout, status.stdout
            assert "must restart to apply host.otlp_endpoint" in status.stdout, status.stdout
            res = await asyncio.to_thread(feedeater, env, "settings", "reset", "host.otlp_endpoint")
            assert "applied by host live-1" in res.stdout, res  # back to what it runs with
            assert await _restart_required(port) == []
            # The host's environment wins over a stored value: `settings set` says so.
            res = await asyncio.to_thread(feedeater, env, "settings", "set", "rss.raw_keep", "5")
            assert "host live-1 keeps FEEDEATER_RSS_RAW_KEEP from its environment" in res.stdout, res
            # The bus streams' limits: the running host updates the streams.
            for days in ("5", None):
                args = ("set", "host.bus_max_age_days", days) if days else ("reset", "host.bus_max_age_days")
                res = await asyncio.to_thread(feedeater, env, "settings", *args)
                assert "applied by host live-1" in res.stdout, res
                assert await _max_age_days(nats_url) == {int(days or 30)}
    finally:
        if proc is not None:
            proc.stop()
        await pool.close()
    assert proc is not None and "Traceback" not in proc.output(), proc.output()[-3000:]
    assert "settings applied: rss.allow_private_networks" in proc.output()
    # A host that stopped cleanly leaves nothing behind in `status` (each restart added stopped copies).
    after = json.loads((await asyncio.to_thread(feedeater, env, "status", "--json")).stdout)
    assert after["hosts"] == [] and after["units"] == [], after


async def _max_age_days(nats_url: str) -> set[float]:
    nc = await nats.connect(nats_url)
    try:
        infos = [await nc.jetstream().stream_info(name) for name in BUS_STREAMS]
    finally:
        await nc.close()
    return {float(i.config.max_age or 0) / 86400 for i in infos}
