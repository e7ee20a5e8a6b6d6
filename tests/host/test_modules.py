"""Module contract: discovery, enable/disable, settings resolution, scheduling and recorded job runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from host import module, settings
from host.errors import UserError
from host.jobs import describe_trigger, parse_trigger, run_job
from host.module import Job, Manifest, Setting
from tests.services import make_host

DEMO = Manifest(
    name="demo",
    version="1",
    description="",
    settings=(
        Setting("limit", "int", 5, "how many", min=1, max=10),
        Setting("mode", "choice", "a", "which", choices=("a", "b")),
        Setting("token", "str", "", "api token", secret=True),
        Setting("on", "bool", False, "switch"),
    ),
)


def test_settings_resolve_default_then_stored_then_env() -> None:
    assert settings.resolve(DEMO, {}, {})["limit"] == 5
    assert settings.resolve(DEMO, {"limit": 7}, {})["limit"] == 7
    assert settings.resolve(DEMO, {"limit": 7}, {"FEEDEATER_DEMO_LIMIT": "9"})["limit"] == 9
    assert settings.resolve(DEMO, {}, {"FEEDEATER_DEMO_ON": "yes"})["on"] is True


@pytest.mark.parametrize(
    ("key", "raw", "reason"),
    [
        ("limit", "11", "above the maximum"),
        ("limit", "0", "below the minimum"),
        ("limit", "x", "not an integer"),
        ("mode", "c", "not one of a, b"),
        ("on", "maybe", "not true/false"),
    ],
)
def test_bad_setting_is_rejected_with_module_key_and_reason(key: str, raw: str, reason: str) -> None:
    with pytest.raises(UserError) as err:
        settings.coerce("demo", DEMO.setting(key), raw)
    assert f"demo.{key}" in str(err.value) and reason in str(err.value)


def test_bad_env_value_is_rejected_too() -> None:
    with pytest.raises(UserError, match="demo.limit"):
        settings.resolve(DEMO, {}, {"FEEDEATER_DEMO_LIMIT": "100"})


def test_unknown_setting_and_secret_display() -> None:
    with pytest.raises(UserError, match="unknown setting demo.nope"):
        DEMO.setting("nope")
    assert settings.display(DEMO.setting("token"), "sk-123") == "********"
    assert "sk-123" not in settings.display(DEMO.setting("token"), "sk-123")


def test_triggers() -> None:
    assert parse_trigger("90s").interval.total_seconds() == 90  # type: ignore[attr-defined]
    assert parse_trigger("5m").interval.total_seconds() == 300  # type: ignore[attr-defined]
    assert "hour='3'" in str(parse_trigger("0 3 * * *"))
    for bad in ("soon", "0s", "61 * * * *"):
        with pytest.raises(UserError):
            parse_trigger(bad)


def test_triggers_read_as_words() -> None:
    """The console's job table: what every job of the built-in modules declares reads as words."""
    assert describe_trigger("60s") == "every 60 s"
    assert describe_trigger("5m") == "every 5 min"
    assert describe_trigger("1d") == "every 24 h"
    assert describe_trigger("17 3 * * *") == "daily at 03:17 UTC"
    assert describe_trigger("5 * * * *") == "hourly at :05"
    assert (
        describe_trigger("0 9 * * 1") == "cron 0 9 * * 1"
    )  # weekday numbers: crontab and APScheduler differ
    assert describe_trigger("*/15 * * * *") == "cron */15 * * * *"


async def test_stored_setting_is_validated_before_storing(host) -> None:
    manifest = host.specs["rss"].manifest
    async with host.pool.acquire() as conn:
        with pytest.raises(UserError, match="rss.lookback_hours"):
            await settings.store(conn, manifest, "lookback_hours", "500")
        assert await conn.fetchval("SELECT count(*) FROM host.settings") == 0
        await settings.store(conn, manifest, "lookback_hours", "24")
    assert (await host.resolved_settings("rss"))["lookback_hours"] == 24


async def test_disabled_module_schedules_nothing(tmp_path: Path, database_url: str, nats_url: str) -> None:
    h = make_host(tmp_path, database_url, nats_url)
    await h.open()
    try:
        for name in h.specs.keys() - {"host"}:  # rss, and any other installed module (discord, digest)
            await h.set_enabled(name, False)
        assert await h.start_scheduler() == ["host.housekeeping"]  # the host's own job runs regardless
        assert h.scheduler is not None and [j.id for j in h.scheduler.get_jobs()] == ["host.housekeeping"]
        with pytest.raises(UserError, match="disabled"):
            await h.run_job_once("rss.poll")
        h.scheduler.shutdown(wait=False)
        await h.set_enabled("rss", True)
        assert sorted(await h.start_scheduler()) == [
            "host.housekeeping",
            "rss.backfill",
            "rss.cleanup",
            "rss.embed",
            "rss.fulltext",
            "rss.poll",
            "rss.updateContexts",
            "rss.websub",
        ]
        job = h.scheduler.get_job("rss.poll")
        assert job is not None and job.max_instances == 1 and job.coalesce is True
    finally:
        await h.close()


async def test_trigger_override_from_env(tmp_path: Path, database_url: str, nats_url: str) -> None:
    h = make_host(tmp_path, database_url, nats_url, env={"FEEDEATER_JOB_RSS_POLL": "15s"})
    await h.open(with_bus=False)
    try:
        await h.start_scheduler()
        assert h.scheduler is not None
        assert h.scheduler.get_job("rss.poll").trigger.interval.total_seconds() == 15
    finally:
        await h.close()


async def test_every_run_is_recorded_with_metrics_or_error(host) -> None:
    ctx = await host.context("rss")

    async def good(_ctx):  # type: ignore[no-untyped-def]
        return {"fetched": 3}

    async def bad(_ctx):  # type: ignore[no-untyped-def]
        raise RuntimeError("feed server on fire")

    ok = await run_job(ctx, Job("good", good, "1m"), trigger="manual")
    failed = await run_job(ctx, Job("bad", bad, "1m"), trigger="schedule")
    assert ok.status == "ok" and failed.status == "failed"
    rows = {r["job"]: r for r in await host.pool.fetch("SELECT * FROM host.job_runs")}
    assert rows["good"]["metrics"] == {"fetched": 3} and rows["good"]["finished_at"] is not None
    assert rows["bad"]["status"] == "failed" and "feed server on fire" in rows["bad"]["error"]
    assert rows["bad"]["trigger"] == "schedule" and rows["good"]["host_id"] == "test-host"


async def test_a_run_cancelled_by_shutdown_is_recorded_not_left_running(host) -> None:
    import asyncio

    ctx = await host.context("rss")
    started = asyncio.Event()

    async def slow(_ctx):  # type: ignore[no-untyped-def]
        started.set()
        await asyncio.sleep(3600)

    task = asyncio.create_task(run_job(ctx, Job("slow", slow, "1m"), trigger="schedule"))
    await asyncio.wait_for(started.wait(), 60)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    row = await host.pool.fetchrow("SELECT status, error, finished_at FROM host.job_runs WHERE job = 'slow'")
    assert row["status"] == "failed" and "cancelled" in row["error"] and row["finished_at"] is not None


def _register(site: Path, dist: str, entry: str) -> None:
    """A distribution's metadata as pip writes it: only what importlib.metadata reads."""
    info = site / f"{dist}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[feedeater.modules]\n{entry}\n")


EXAMPLE_SRC = Path(__file__).resolve().parent.parent / "example_module"


def test_modules_are_found_through_entry_points(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLE_SRC))
    monkeypatch.syspath_prepend(str(tmp_path))
    _register(tmp_path, "feedeater_example", "example = feedeater_example:MODULE")
    found = module.discover()
    assert {"rss", "example"} <= set(found)  # the built-in is registered the same way
    assert found["example"].manifest.subscriptions[0].subject == "feedeater.rss.messageCreated"


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("other = feedeater_example:MODULE", "must equal the entry-point name"),
        ("broken = no_such_package_xyz:MODULE", "cannot be imported: ModuleNotFoundError"),
        ("notaspec = feedeater_example:NAME", "is not a ModuleSpec"),
    ],
)
def test_a_malformed_plugin_is_skipped_with_one_line_and_the_others_are_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, entry: str, message: str
) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLE_SRC))
    monkeypatch.syspath_prepend(str(tmp_path))
    _register(tmp_path, "feedeater_bad", entry)
    skipped: dict[str, str] = {}
    found = module.discover(skipped)
    name = entry.split(" = ")[0]
    assert name not in found and {"rss", "digest"} <= set(found)
    assert list(skipped) == [name] and message in skipped[name] and "\n" not in skipped[name]


def test_two_distributions_with_one_module_name_are_both_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLE_SRC))
    monkeypatch.syspath_prepend(str(tmp_path))
    _register(tmp_path, "feedeater_one", "example = feedeater_example:MODULE")
    (tmp_path / "example_copy.py").write_text(
        "import dataclasses\nfrom feedeater_example import MODULE as ORIGINAL\nMODULE = dataclasses.replace(ORIGINAL)\n"
    )
    _register(tmp_path, "feedeater_two", "example = example_copy:MODULE")
    skipped: dict[str, str] = {}
    assert "example" not in module.discover(skipped)
    assert "example" in skipped
