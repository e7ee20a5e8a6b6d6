"""The second day (issue #20), end to end with a real `feedeater run`: a settings change reaches the
running host, the scheduled job builds every digest type on two consecutive (simulated) days, and the
commands work from any directory (one data directory per user)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from datetime import timedelta
from pathlib import Path

import asyncpg
import pytest

from modules.digest.deliver.publish import digest_id
from modules.digest.settings import TYPES
from tests.feedserver import FeedServer, Route, ago, rss
from tests.services import FEEDEATER, HostProcess, until

STORIES = [
    ("rail", "Council approves light rail line", ago(hours=2), "The city council approved a rail line."),
    ("comet", "Comet to pass close to Earth", ago(hours=3), "Astronomers catalogued a comet."),
]


def _cli_env(tmp_path: Path, database_url: str, nats_url: str) -> dict[str, str]:
    """A user's shell: no FEEDEATER_HOME (the per-user default), this test's services."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FEEDEATER_") and k != "COLUMNS"}
    env.update(
        XDG_DATA_HOME=str(tmp_path / "xdg"),
        FEEDEATER_DATABASE_URL=database_url,
        FEEDEATER_NATS_URL=nats_url,
        FEEDEATER_RSS_ALLOW_PRIVATE_NETWORKS="true",
    )
    return env


async def _scheduled(pool: asyncpg.Pool, per_type: int) -> bool:
    rows = await pool.fetch(
        "SELECT type, count(*) AS n FROM mod_digest.digests WHERE scheduled GROUP BY type"
    )
    return {r["type"]: r["n"] for r in rows} == dict.fromkeys(TYPES, per_type)


async def _yesterday(pool: asyncpg.Pool) -> None:
    """The night passes: every scheduled digest becomes the previous slot's (a week back for the weekly),
    with the id that slot's build gives it."""
    for row in await pool.fetch("SELECT id, type, window_start, window_end FROM mod_digest.digests"):
        step = timedelta(days=7 if row["type"] == "weekly" else 1)
        end = row["window_end"] - step
        await pool.execute(
            "UPDATE mod_digest.digests SET id = $2, window_start = $3, window_end = $4 WHERE id = $1",
            row["id"],
            digest_id(row["type"], end, scheduled=True),
            row["window_start"] - step,
            end,
        )


@pytest.mark.timeout(900)  # waits for conditions with generous deadlines; a busy machine is slow
async def test_the_second_day(tmp_path: Path, database_url: str, nats_url: str) -> None:
    env = _cli_env(tmp_path, database_url, nats_url)
    here, there = tmp_path / "project", tmp_path / "elsewhere"
    here.mkdir()
    there.mkdir()

    def run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [*FEEDEATER, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False
        )
        assert done.returncode == 0 and "Traceback" not in done.stderr, (args, done.stderr)
        return done

    async def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
        return await asyncio.to_thread(run, cwd, *args)

    pool = await asyncpg.create_pool(database_url, min_size=1, max_size=2)
    proc: HostProcess | None = None
    try:
        with FeedServer() as feeds:
            feeds.route("/news", Route(body=rss(STORIES, title="News")))
            await cli(here, "rss", "add", feeds.url("/news"))
            proc = HostProcess(
                tmp_path / "host", database_url, nats_url, "day-2", FEEDEATER_JOB_DIGEST_SCHEDULED="2s"
            )
            await until(lambda: _scheduled_morning(pool), timeout=300, what="the default morning digest")
            # Every digest type on schedule: a setting the running host must see without a restart.
            changed = await cli(there, "settings", "set", "digest.schedule", "morning,midday,evening,weekly")
            assert "applied by host day-2" in changed.stdout, changed.stdout
            await until(lambda: _scheduled(pool, 1), timeout=300, what="the first digest of every type")
            await _yesterday(pool)
            await until(lambda: _scheduled(pool, 2), timeout=300, what="the second digest of every type")
            failed = await pool.fetch(
                "SELECT error FROM host.job_runs WHERE module = 'digest' AND status = 'failed'"
            )
            assert failed == [], failed  # the second build of a type crashed before (issue #20 item 1)
            listed = json.loads((await cli(there, "digest", "list", "--json")).stdout)
            assert len(listed) == 2 * len(TYPES)
            shown = await cli(here, "digest", "show", str(listed[0]["id"]), "--format", "json")
            assert isinstance(json.loads(shown.stdout).get("items"), list)
            status = (await cli(there, "status")).stdout
            assert status.startswith(f"data: {tmp_path / 'xdg' / 'feedeater'}\n"), status
            assert "host day-2: running since" in status
    finally:
        if proc is not None:
            proc.stop()
        await pool.close()
    assert proc is not None and "Traceback" not in proc.output(), proc.output()[-3000:]
    assert not (here / ".feedeater").exists() and not (there / ".feedeater").exists()


async def _scheduled_morning(pool: asyncpg.Pool) -> bool:
    return bool(
        await pool.fetchval("SELECT count(*) FROM mod_digest.digests WHERE scheduled AND type = 'morning'")
    )
