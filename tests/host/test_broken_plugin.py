"""Fault isolation: an installed plugin that cannot be imported is skipped with one warning line, and every
other module and every command (`modules disable` of the broken one included) keeps working."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from host.console import overview
from host.testing import running
from modules.rss import store as rss_store
from tests.feedserver import FeedServer, Route, ago, rss
from tests.services import feedeater, feedeater_env, make_host, module_installed, until

BROKEN = "kwalert"


@pytest.fixture
def broken_plugin(tmp_path: Path) -> Iterator[str]:
    """A plugin whose package imports a dependency that is not installed; yields the PYTHONPATH."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "kwalert_pkg.py").write_text("import no_such_dependency_xyz  # noqa\nMODULE = None\n")
    with module_installed(site, BROKEN, "kwalert_pkg:MODULE") as pythonpath:
        yield pythonpath


def warnings_in(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if f"module {BROKEN} skipped" in line]


async def test_run_keeps_collecting_beside_a_broken_plugin_and_says_so_once(
    tmp_path: Path,
    database_url: str,
    nats_url: str,
    broken_plugin: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    host = make_host(tmp_path / "home", database_url, nats_url, env={"FEEDEATER_JOB_RSS_POLL": "1s"})
    assert BROKEN in host.skipped and "ModuleNotFoundError" in host.skipped[BROKEN]
    with FeedServer() as server, caplog.at_level(logging.INFO, logger="feedeater.host"):
        server.route("/f", Route(body=rss([("a", "first", ago(hours=1), "text")])))
        async with running(host):
            async with host.require_pool().acquire() as conn:
                await rss_store.add_feed(conn, url=server.url("/f"))
            await until(
                lambda: host.require_pool().fetchval("SELECT count(*) FROM mod_rss.entries"),
                timeout=120,
                what="rss collects beside the broken plugin",
            )
            report = await host.health()
            view = await overview.load(host)
    assert report["skipped_modules"] == {BROKEN: host.skipped[BROKEN]}
    assert report["status"] == "ok", report["degraded"]  # the broken plugin is not this host's fault
    assert view.skipped == {BROKEN: host.skipped[BROKEN]}
    said = [r for r in caplog.records if f"module {BROKEN} skipped" in r.getMessage()]
    assert len(said) == 1 and said[0].levelno == logging.WARNING


def test_every_command_works_and_the_broken_plugin_can_be_disabled(
    tmp_path: Path, database_url: str, nats_url: str, broken_plugin: str
) -> None:
    env = feedeater_env(tmp_path / "home", database_url, nats_url, PYTHONPATH=broken_plugin)
    res = feedeater(env, "modules", "disable", BROKEN)
    assert res.returncode == 0, res.stderr
    assert f"module {BROKEN} disabled" in res.stdout
    assert len(warnings_in(res.stderr)) == 1 and "ModuleNotFoundError" in res.stderr

    res = feedeater(env, "status", "--json")
    assert res.returncode == 0, res.stderr
    mods = {m["name"]: m for m in json.loads(res.stdout)["modules"]}
    assert {"rss", "digest"} <= set(mods)
    assert mods[BROKEN]["enabled"] is False and "no_such_dependency_xyz" in mods[BROKEN]["skipped"]
    assert len(warnings_in(res.stderr)) == 1

    res = feedeater(env, "rss", "list")
    assert res.returncode == 0, res.stderr
