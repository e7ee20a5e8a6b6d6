"""A module's `cli=` hook: every command gets the standard `--json` (docs/modules.md section 9), and
`host.cli.emit` prints database rows as they come from the pool; `db roles` shows and scripts the roles."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import asyncpg
import pytest

from host import cli
from host.module import Manifest, ModuleSpec
from tests.services import feedeater, feedeater_env


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    top = sub.add_parser("demo", help="a module's commands")
    actions = top.add_subparsers(dest="demo_action", required=True)
    actions.add_parser("list")
    own = actions.add_parser("show")
    own.add_argument("--json", action="store_true", help="its own")  # declared by the module: kept
    sub.add_parser("democount")


SPECS = {"demo": ModuleSpec(Manifest("demo", "1", "demo"), cli=register)}


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["demo", "list", "--json"], True),
        (["demo", "list"], False),
        (["demo", "show", "--json"], True),
        (["democount", "--json"], True),
    ],
)
def test_every_module_command_takes_json(argv: list[str], expected: bool) -> None:
    assert cli.build_parser(dict(SPECS)).parse_args(argv).json is expected


@pytest.mark.asyncio
async def test_emit_prints_rows_and_dates_as_json(
    database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    conn = await asyncpg.connect(database_url)
    try:
        rows = await conn.fetch(
            "SELECT 1 AS id, 'a' AS title, timestamptz '2026-01-02 03:04:05+00' AS at, date '2026-01-02' AS day"
        )
    finally:
        await conn.close()
    cli.emit(argparse.Namespace(json=True), rows, lambda d: "text")
    assert json.loads(capsys.readouterr().out) == [
        {"id": 1, "title": "a", "at": "2026-01-02T03:04:05+00:00", "day": "2026-01-02"}
    ]
    cli.emit(argparse.Namespace(json=False), rows, lambda d: f"{len(d)} row")
    assert capsys.readouterr().out == "1 row\n"


def test_db_roles_lists_the_roles_and_prints_the_script(
    tmp_path: Path, database_url: str, nats_url: str
) -> None:
    env = feedeater_env(tmp_path, database_url, nats_url)
    listed = feedeater(env, "db", "roles", "--json")
    assert listed.returncode == 0, listed.stderr
    rss = next(m for m in json.loads(listed.stdout)["modules"] if m["module"] == "rss")
    assert rss == {"module": "rss", "role": "feedeater_mod_rss", "own_role": True}
    script = feedeater(env, "db", "roles", "--print-sql")
    assert script.returncode == 0, script.stderr
    assert 'CREATE ROLE "feedeater_mod_rss" NOLOGIN' in script.stdout
    assert 'GRANT "feedeater_mod_rss" TO "postgres"' in script.stdout
