"""Modules that require others (`Manifest.requires`) and what they may call of them (`Manifest.public`):
started in dependency order, refused or skipped with one line when a requirement is missing or disabled,
and given the required module's public API with its settings as the host resolved them (issue #22)."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from host import module
from host.errors import UserError
from host.module import Manifest, ModuleSpec
from modules.rss.public import Rss
from tests.discord.harness import discord_installed
from tests.services import feedeater, feedeater_env, make_host, module_installed


def spec(name: str, *requires: str) -> ModuleSpec:
    return ModuleSpec(Manifest(name, "1", "test module", requires=requires))


def test_start_order_puts_every_module_after_what_it_requires() -> None:
    specs = {"a": spec("a", "c"), "b": spec("b"), "c": spec("c", "b"), "d": spec("d")}
    assert module.start_order(specs) == ["b", "c", "a", "d"]


def test_missing_and_circular_requirements_are_one_line_each() -> None:
    specs = {
        "ok": spec("ok"),
        "needy": spec("needy", "absent"),
        "chain": spec("chain", "needy"),  # needs a module that cannot start
        "x": spec("x", "y"),
        "y": spec("y", "x"),
    }
    problems = module.requirement_problems(specs)
    assert set(problems) == {"needy", "chain", "x", "y"}
    assert problems["needy"].startswith("it requires module absent, which is not installed")
    assert "`feedeater modules disable needy`" in problems["needy"]
    assert "requires module needy" in problems["chain"]
    assert "cycle" in problems["x"] and "cycle" in problems["y"]
    assert all("\n" not in why for why in problems.values())


def test_a_module_cannot_require_itself() -> None:
    with pytest.raises(UserError, match="must name other modules"):
        module.check(spec("selfish", "selfish"), "entry point selfish", "selfish")


@pytest.fixture
def needy_plugin(tmp_path: Path) -> Iterator[str]:
    """An installed plugin that requires a module nobody installed; yields the PYTHONPATH."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "needy_pkg.py").write_text(
        "from host.module import Manifest, ModuleSpec\n"
        "MODULE = ModuleSpec(Manifest('needy', '1', 'needs absent', requires=('absent',)))\n"
    )
    with module_installed(site, "needy", "needy_pkg:MODULE") as pythonpath:
        yield pythonpath


def test_a_module_whose_requirement_is_not_installed_is_skipped_with_one_line(
    tmp_path: Path, database_url: str, nats_url: str, needy_plugin: str
) -> None:
    host = make_host(tmp_path, database_url, nats_url)
    assert "needy" not in host.specs
    assert host.skipped["needy"].startswith("it requires module absent, which is not installed")
    env = feedeater_env(tmp_path / "cli", database_url, nats_url, PYTHONPATH=needy_plugin)
    res = feedeater(env, "modules", "list")
    assert res.returncode == 0, res.stderr
    said = [line for line in res.stderr.splitlines() if "module needy skipped" in line]
    assert len(said) == 1 and "requires module absent" in said[0]


def test_disabling_a_required_module_or_enabling_its_dependant_says_what_will_not_start(
    tmp_path: Path, database_url: str, nats_url: str
) -> None:
    with discord_installed(tmp_path / "site") as pythonpath:
        env = feedeater_env(tmp_path / "home", database_url, nats_url, PYTHONPATH=pythonpath)
        warned = (
            "module discord requires module rss, which is disabled: it will not start (enable it "
            "(`feedeater modules enable rss`) or disable discord (`feedeater modules disable discord`))"
        )
        res = feedeater(env, "modules", "disable", "rss")
        assert res.returncode == 0, res.stderr
        assert res.stdout.splitlines()[1] == warned
        res = feedeater(env, "modules", "disable", "discord", "--json")
        assert json.loads(res.stdout)["requirements"] == []  # nothing left that cannot start
        res = feedeater(env, "modules", "enable", "discord")
        assert res.returncode == 0 and warned in res.stdout.splitlines(), res.stdout
        res = feedeater(env, "modules", "enable", "rss")
        assert res.returncode == 0 and "requires" not in res.stdout, res.stdout


async def test_a_module_whose_requirement_is_disabled_is_not_started_and_says_so_once(
    tmp_path: Path, database_url: str, nats_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    with discord_installed(tmp_path / "site"):
        host = make_host(tmp_path, database_url, nats_url)
    await host.open(with_bus=False)
    try:
        # as a database from before `requires` may have it: rss disabled, discord enabled
        await host.require_pool().execute(
            "INSERT INTO host.modules (name, enabled) VALUES ('rss', false), ('discord', true)"
        )
        with caplog.at_level(logging.INFO, logger="feedeater.host"):
            started = [ctx.name for ctx in await host.enabled_contexts()]
        assert "discord" not in started and "rss" not in started and "digest" in started
        said = [r for r in caplog.records if "module discord requires module rss" in r.getMessage()]
        assert len(said) == 1 and said[0].levelno == logging.WARNING
        assert "`feedeater modules enable rss`" in said[0].getMessage()
        with pytest.raises(UserError, match="module discord requires module rss, which is disabled"):
            await host.run_job_once("discord.prune")
    finally:
        await host.close()


async def test_a_required_modules_public_api_comes_with_the_settings_the_host_resolved(
    tmp_path: Path, database_url: str, nats_url: str
) -> None:
    with discord_installed(tmp_path / "site"):
        host = make_host(
            tmp_path, database_url, nats_url, env={"FEEDEATER_RSS_USER_AGENT": "resolved-by-the-host/1"}
        )
    await host.open(with_bus=False)
    try:
        discord_ctx = await host.context("discord")
        assert list(host.contexts) == ["rss", "discord"]  # rss set up first: discord requires it
        rss = discord_ctx.api("rss", Rss)
        assert rss is await host.public_api("rss")  # made once
        async with rss.fetcher() as fetcher:  # not os.environ: the host's own environment
            assert fetcher.user_agent == "resolved-by-the-host/1"
        await host.require_pool().execute(
            """INSERT INTO host.settings (module, key, value) VALUES ('rss', 'user_agent', '"stored/2"')"""
        )
        host.env.pop("FEEDEATER_RSS_USER_AGENT")
        host.started_at = datetime.now(UTC)
        await host.apply_settings("rss")  # what a running host does when told of the change
        async with rss.fetcher() as fetcher:
            assert fetcher.user_agent == "stored/2"
        with pytest.raises(UserError, match="uses module digest without requiring it"):
            discord_ctx.api("digest", object)
    finally:
        await host.close()
