"""The `feedeater` command as a user runs it: real processes, real services, one-line errors."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from host.services import free_port
from tests.services import FEEDEATER, feedeater, feedeater_env


@pytest.fixture
def cli_env(tmp_path: Path, database_url: str, nats_url: str) -> dict[str, str]:
    return feedeater_env(tmp_path, database_url, nats_url)


def assert_one_line_error(res: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert res.returncode == 2, res
    errors = [line for line in res.stderr.splitlines() if line.startswith("feedeater: error: ")]
    assert len(errors) == 1, res.stderr
    assert "Traceback" not in res.stderr
    for needle in needles:
        assert needle in res.stderr


def test_modules_and_settings(cli_env: dict[str, str]) -> None:
    res = feedeater(cli_env, "modules", "list", "--json")
    assert res.returncode == 0, res.stderr
    mods = {m["name"]: m for m in json.loads(res.stdout)}
    assert mods["rss"]["enabled"] is True
    assert mods["rss"]["services"] == ["search"] and mods["host"]["jobs"] == ["housekeeping (41 * * * *)"]
    res = feedeater(cli_env, "settings", "set", "rss.lookback_hours", "24")
    # Running hosts read settings at start: the command says they must be restarted.
    assert res.returncode == 0 and "restart them" in res.stdout, res
    got = json.loads(feedeater(cli_env, "settings", "get", "rss.lookback_hours", "--json").stdout)
    assert got == [
        {
            "key": "lookback_hours",
            "type": "int",
            "value": 24,
            "secret": False,
            "description": got[0]["description"],
        }
    ]
    assert_one_line_error(
        feedeater(cli_env, "settings", "set", "rss.lookback_hours", "500"), "rss.lookback_hours", "maximum"
    )
    assert_one_line_error(
        feedeater(cli_env, "settings", "set", "rss.no_such_key", "1"), "unknown setting rss.no_such_key"
    )
    assert_one_line_error(feedeater(cli_env, "settings", "get", "nope"), "unknown module 'nope'")
    assert (
        json.loads(feedeater(cli_env, "settings", "get", "rss.lookback_hours", "--json").stdout)[0]["value"]
        == 24
    )


def test_disable_enable_and_jobs(cli_env: dict[str, str]) -> None:
    assert feedeater(cli_env, "modules", "disable", "rss").returncode == 0
    assert_one_line_error(feedeater(cli_env, "jobs", "run", "rss.poll"), "disabled")
    assert feedeater(cli_env, "modules", "enable", "rss").returncode == 0
    res = feedeater(cli_env, "jobs", "run", "rss.poll", "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["status"] == "ok"
    jobs = {j["job"]: j for j in json.loads(feedeater(cli_env, "jobs", "list", "--json").stdout)}
    assert jobs["rss.poll"]["last_status"] == "ok" and jobs["rss.poll"]["trigger"] == "60s"
    assert_one_line_error(feedeater(cli_env, "jobs", "run", "rss.nope"), "unknown job rss.nope")


def test_unreachable_database_is_one_clear_line(cli_env: dict[str, str]) -> None:
    env = {**cli_env, "FEEDEATER_DATABASE_URL": f"postgresql://postgres@127.0.0.1:{free_port()}/x"}
    assert_one_line_error(feedeater(env, "status"), "cannot connect to PostgreSQL", "FEEDEATER_DATABASE_URL")


def test_unreachable_nats_is_one_clear_line(cli_env: dict[str, str]) -> None:
    env = {**cli_env, "FEEDEATER_NATS_URL": f"nats://127.0.0.1:{free_port()}"}
    assert_one_line_error(
        feedeater(env, "jobs", "run", "rss.poll"), "cannot connect to NATS", "FEEDEATER_NATS_URL"
    )


def test_run_serves_health_and_metrics_then_stops_on_sigterm(cli_env: dict[str, str]) -> None:
    port = free_port()
    proc = subprocess.Popen(
        [*FEEDEATER, "run"],
        env={**cli_env, "FEEDEATER_HTTP_PORT": str(port)},
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        health = _get_when_up(f"http://127.0.0.1:{port}/healthz")
        assert json.loads(health)["ok"] is True
        metrics = _get_when_up(f"http://127.0.0.1:{port}/metrics")
        assert "feedeater_outbox_pending" in metrics
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "Traceback" not in err


def test_port_taken_is_one_clear_line(cli_env: dict[str, str]) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        res = feedeater({**cli_env, "FEEDEATER_HTTP_PORT": str(s.getsockname()[1])}, "run")
    assert_one_line_error(res, "cannot serve", "FEEDEATER_HTTP_PORT")


def _get_when_up(url: str, timeout: float = 30) -> str:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                return str(r.read().decode())
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def test_every_environment_variable_the_code_reads_is_documented() -> None:
    """FEEDEATER_DB_POOL was read but documented nowhere: each fixed name must be in README and .env.example."""
    import re

    root = Path(__file__).resolve().parent.parent.parent
    code = "\n".join(p.read_text() for d in ("host", "modules") for p in (root / d).rglob("*.py"))
    names = set(re.findall(r'"(FEEDEATER_[A-Z_]+[A-Z])"', code)) - {"FEEDEATER_JOB_"}
    assert "FEEDEATER_DB_POOL" in names and "FEEDEATER_DB_WAIT_SECONDS" in names
    for doc in ("README.md", ".env.example"):
        text = (root / doc).read_text()
        assert not [n for n in names if n not in text], doc
