"""The `feedeater` command as a user runs it: real processes, real services, one-line errors."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import select
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from host.cli import main
from host.services import EmbeddedNats, free_port
from tests.fakeai import FakeAI
from tests.rss.conftest import fake_ai
from tests.services import FEEDEATER, feedeater, feedeater_env, restored_logging

__all__ = ["fake_ai"]  # the rss tests' fixture, for the embed job run through the CLI


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
    # No host runs here: the command says when it applies (tests/host/test_live_settings.py: with hosts).
    assert res.returncode == 0 and "no host is running" in res.stdout, res
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
    assert jobs["rss.poll"]["last_status"] == "ok" and jobs["rss.poll"]["trigger"] == "30s"
    assert (
        jobs["rss.updateContexts"]["trigger"] == "5m"
    )  # a new feed's first context soon after its first poll
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
        _, err = proc.communicate(timeout=120)  # generous: a loaded machine stops slowly
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    assert "stopped in" in err  # the stop went through Host.close and said what each step took


def test_port_taken_is_one_clear_line(cli_env: dict[str, str]) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        res = feedeater({**cli_env, "FEEDEATER_HTTP_PORT": str(s.getsockname()[1])}, "run")
    assert_one_line_error(res, "cannot serve", "FEEDEATER_HTTP_PORT")


def _get_when_up(url: str, timeout: float = 300) -> str:
    """The body once the URL answers 200; generous: `feedeater run` takes minutes to start at load 20."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                return str(r.read().decode())
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def test_building_the_command_line_imports_no_heavy_library() -> None:
    """Every `feedeater` command builds the whole parser (each module's CLI): scikit-learn, scipy,
    discord.py or FastAPI imported there cost every command seconds (`--help` took 2.3 s, now 0.3 s);
    asyncio, asyncpg and w3lib another ~0.1 CPU s, paid by `--help` and every argument error."""
    heavy = {"sklearn", "scipy", "discord", "fastapi", "asyncio", "asyncpg", "w3lib", "nats"}
    probe = (
        "import sys; from host import cli, module; cli.build_parser(module.discover()); "
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & {heavy!r}))"
    )
    res = subprocess.run([*FEEDEATER[:1], "-c", probe], capture_output=True, text=True, check=True)
    assert res.stdout.strip() == "[]", res.stdout


def test_database_only_commands_do_not_import_the_bus_client() -> None:
    """`rss list` opens the database only; nats-py imports aiohttp (~0.35 CPU s) when discord.py installs it.
    host.housekeeping once imported host.bus for one constant, and every command paid it."""
    probe = (
        "import sys; import host.runtime, host.housekeeping, modules.rss.cli; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'nats', 'aiohttp'}))"
    )
    res = subprocess.run([*FEEDEATER[:1], "-c", probe], capture_output=True, text=True, check=True)
    assert res.stdout.strip() == "[]", res.stdout


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


# -- the first hour (issue #15) --------------------------------------------------------------------
def test_unknown_setting_suggests_the_closest_names(cli_env: dict[str, str]) -> None:
    assert_one_line_error(
        feedeater(cli_env, "settings", "get", "rss.lookback"), "did you mean rss.lookback_hours"
    )
    assert_one_line_error(
        feedeater(cli_env, "settings", "set", "rss.timeout_second", "5"), "did you mean rss.timeout_seconds"
    )


def test_settings_and_status_read_well(cli_env: dict[str, str]) -> None:
    from host.textfmt import width

    res = feedeater({**cli_env, "COLUMNS": "100"}, "settings", "get", "rss")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert len(lines) > 30 and max(width(line) for line in lines) <= 100
    assert any("…" in line for line in lines)  # long descriptions and prompts are cut, not wrapped
    status = feedeater(cli_env, "status")
    assert status.returncode == 0, status.stderr
    first = status.stdout.splitlines()[:3]
    assert first[0] == f"data: {cli_env['FEEDEATER_HOME']}"
    assert first[1].startswith("postgres: external at postgresql://") and first[2].startswith(
        "nats: external at nats://"
    )
    # a source nothing was published for is not "pending" (tests/rss/test_cli_reading.py: a new feed's is)
    assert_one_line_error(
        feedeater(cli_env, "contexts", "show", "rss:feed:424242"),
        "no context rss:feed:424242: nothing has been published for it",
        "feedeater contexts list",
    )


def test_jobs_run_is_quiet_off_a_terminal_and_jobs_list_says_what_runs_did(
    cli_env: dict[str, str], fake_ai: FakeAI
) -> None:
    res = feedeater(cli_env, "jobs", "run", "rss.poll")
    assert res.returncode == 0 and res.stderr == "", res.stderr
    assert res.stdout.startswith("rss.poll: ok in ")
    listed = feedeater(cli_env, "jobs", "list")
    row = next(line for line in listed.stdout.splitlines() if line.startswith("rss.poll"))
    assert " ago" in row and "ok" in row
    ai_env = {
        **cli_env,
        "FEEDEATER_HOST_EMBEDDER": "openai",
        "FEEDEATER_HOST_EMBEDDING_MODEL": "fake-embed",
        "FEEDEATER_HOST_OPENAI_BASE_URL": fake_ai.base_url,
    }
    assert feedeater(ai_env, "jobs", "run", "rss.embed").returncode == 0
    for command in ("status", "jobs"):  # the embedding backlog and rate, from the embed job's last run
        wide = {**cli_env, "COLUMNS": "200"}  # tables fit the terminal: don't let its width cut the metrics
        out = feedeater(wide, *([command] if command == "status" else [command, "list"])).stdout
        line = next(line for line in out.splitlines() if "rss.embed" in line)
        assert "embedded 0" in line and "per second 0" in line and "pending 0" in line, line


def test_bus_tail_prints_one_line_per_event(cli_env: dict[str, str], nats_url: str) -> None:
    import asyncio

    import nats

    proc = subprocess.Popen(
        [*FEEDEATER, "bus", "tail", "--count", "2"],
        env=cli_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    event = {
        "type": "MessageCreated",
        "message": {"createdAt": "2026-11-26T05:40:12.000Z", "From": "Daily", "tags": {"title": "Hello"}},
    }
    module_event = {"type": "EntrySeen", "createdAt": "2026-11-26T05:41:00.000Z", "title": "Hi"}

    async def publish_until_done() -> None:
        nc = await nats.connect(nats_url)
        try:
            deadline = time.monotonic() + 300  # the command's imports take a while on a busy machine
            while proc.poll() is None and time.monotonic() < deadline:
                await nc.publish("feedeater.rss.messageCreated", json.dumps(event).encode())
                await nc.publish("feedeater.example.entrySeen", json.dumps(module_event).encode())
                await asyncio.sleep(0.2)
        finally:
            await nc.close()

    asyncio.run(publish_until_done())
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    lines = out.splitlines()
    assert len(lines) == 2
    assert set(lines) == {  # issue #23: a module's own events had no time nor source
        "2026-11-26 05:40Z  rss      MessageCreated  Daily: Hello  [feedeater.rss.messageCreated]",
        '2026-11-26 05:41Z  example  EntrySeen       {"title": "Hi"}  [feedeater.example.entrySeen]',
    }


def test_bus_tail_follows_the_bundled_nats_across_a_restart_and_ends_quietly(
    tmp_path: Path, database_url: str
) -> None:
    """Issue #23: when the host that started the bundled NATS stopped, `bus tail` reconnected forever to a
    port the next NATS did not use, and Ctrl-C then ended in a ConnectionReconnectingError traceback."""
    import asyncio

    import nats

    env = feedeater_env(tmp_path, database_url, "", unset=["FEEDEATER_NATS_URL"])  # the bundled one
    proc = subprocess.Popen(
        [*FEEDEATER, "bus", "tail"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    bundled = EmbeddedNats(tmp_path / "nats")

    async def publish(url: str) -> None:
        nc = await nats.connect(url)
        try:
            await nc.publish("feedeater.rss.messageCreated", b"{}")
            await nc.flush()
        finally:
            await nc.close()

    def heard_one() -> None:
        """Publish until the tail prints a line (it subscribes, or resubscribes, a moment later)."""
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, "bus tail printed nothing"
            url = bundled.status().url
            if url:
                with contextlib.suppress(Exception):  # the server may be on its way up
                    asyncio.run(publish(url))
            if select.select([proc.stdout], [], [], 0.5)[0]:
                assert proc.stdout is not None and proc.stdout.readline().strip()
                return

    try:
        heard_one()
        port = bundled.status().url
        bundled.stop()  # as `feedeater run` stops the NATS it started
        assert bundled.start() == port  # the next run's NATS comes back where clients know it
        heard_one()  # the tail reconnected by itself
        bundled.stop()
        proc.send_signal(signal.SIGINT)  # Ctrl-C while it is reconnecting
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
        bundled.stop()
    assert proc.returncode == 0 and "Traceback" not in err, err


def test_run_says_where_everything_is_and_takes_a_free_port_when_9464_is_busy(
    cli_env: dict[str, str],
) -> None:
    env = {k: v for k, v in cli_env.items() if k != "FEEDEATER_HTTP_PORT"}
    with contextlib.ExitStack() as stack:
        blocker = stack.enter_context(socket.socket())
        with contextlib.suppress(OSError):  # already taken by something else: just as good
            blocker.bind(("127.0.0.1", 9464))
            blocker.listen()
        proc = subprocess.Popen([*FEEDEATER, "run"], env=env, stderr=subprocess.PIPE, text=True)
        try:
            assert proc.stderr is not None
            head = [proc.stderr.readline() for _ in range(5)]
            taken = next(line for line in head if "port 9464 is in use" in line)
            port = int(taken.split(" are on port ")[1].split()[0])
            assert any(line.startswith("feedeater: data in ") for line in head)
            assert any(line.strip().startswith("postgres: postgresql://") for line in head)
            assert any(line.strip().startswith("nats:") for line in head)
            assert json.loads(_get_when_up(f"http://127.0.0.1:{port}/healthz"))["ok"] is True
            assert "feedeater_rss_embedding_backlog" in _get_when_up(f"http://127.0.0.1:{port}/metrics")
        finally:
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=120)  # generous: a loaded machine stops slowly
    assert proc.returncode == 0, err


# -- the second day (issue #20) ------------------------------------------------------------------------
def test_the_data_directory_is_one_per_user_not_per_current_directory() -> None:
    from host.config import default_home

    home = {"HOME": "/home/ann"}
    assert default_home(home, "linux") == Path("/home/ann/.local/share/feedeater")
    assert default_home({**home, "XDG_DATA_HOME": "/data/ann"}, "linux") == Path("/data/ann/feedeater")
    assert default_home({**home, "XDG_DATA_HOME": "rel"}, "linux") == Path("/home/ann/.local/share/feedeater")
    assert default_home(home, "darwin") == Path("/home/ann/Library/Application Support/feedeater")
    assert default_home({"LOCALAPPDATA": "C:/Users/ann/AppData/Local"}, "win32") == Path(
        "C:/Users/ann/AppData/Local/feedeater"
    )


def test_commands_from_another_directory_reach_the_same_instance(tmp_path: Path) -> None:
    """Item 3: FEEDEATER_HOME defaulted to ./.feedeater, so `cd elsewhere && feedeater …` started a second,
    empty instance (an API token created there "did not exist" for the real host)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FEEDEATER_") and k != "COLUMNS"}
    env["XDG_DATA_HOME"] = str(tmp_path / "xdg")
    data = tmp_path / "xdg" / "feedeater"
    first, second = tmp_path / "project", tmp_path / "elsewhere"
    first.mkdir()
    (second / ".feedeater" / "postgres").mkdir(parents=True)  # an older version's data in the other directory

    def run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*FEEDEATER, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False
        )

    try:
        empty = run(first, "rss", "list")
        assert empty.returncode == 0, empty.stderr
        assert empty.stdout.startswith(f"no feeds in {data} (the data directory;"), empty.stdout
        made = run(first, "api", "token", "create", "--name", "day-two", "--json")
        assert made.returncode == 0, made.stderr
        listed = run(second, "api", "token", "list", "--json")
        assert listed.returncode == 0, listed.stderr
        assert [t["name"] for t in json.loads(listed.stdout)] == ["day-two"]
        assert f"{second / '.feedeater'} holds data of an older feedeater" in listed.stderr, listed.stderr
        assert "Traceback" not in listed.stderr
        status = run(second, "status")
        assert status.stdout.startswith(f"data: {data}\n"), status.stdout
        assert not (first / ".feedeater").exists()
    finally:
        run(first, "services", "down")


def test_bad_bus_subject_and_unknown_context_are_one_line_with_a_fix(cli_env: dict[str, str]) -> None:
    """Issue #20: `bus tail 'foo bar'` ended in nats-py's BadSubjectError traceback; the README's
    `contexts show digest:morning` named a key that is really `digest:digest:morning`."""
    assert_one_line_error(
        feedeater(cli_env, "bus", "tail", "foo bar"), "'foo bar' is not a subject: it contains a space"
    )
    assert_one_line_error(feedeater(cli_env, "bus", "tail", "feedeater.>.x"), "wildcards stand alone")
    built = feedeater(cli_env, "digest", "build", "--type", "morning")
    assert built.returncode == 0, built.stderr
    assert_one_line_error(
        feedeater(cli_env, "contexts", "show", "digest:morning"), "did you mean digest:digest:morning?"
    )
    shown = feedeater(cli_env, "contexts", "show", "digest:digest:morning")
    assert shown.returncode == 0 and shown.stdout.startswith("digest:digest:morning"), shown


def test_an_in_process_main_leaves_the_root_logger_as_it_found_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    """main() sets logging up for its process; in a test, its handler held pytest's captured stderr,
    closed after the test, and later tests' logs went there."""
    monkeypatch.setenv("FEEDEATER_HOME", str(tmp_path))
    monkeypatch.setenv("FEEDEATER_DATABASE_URL", "postgresql://feedeater@localhost/feedeater")
    root = logging.getLogger()
    before = (root.handlers[:], root.level)
    with restored_logging():
        assert main(["db", "roles", "--print-sql"]) == 0
        assert root.handlers != before[0]  # main() did replace them: what is restored below
    assert (root.handlers, root.level) == before
    assert "restored_root_logger" in request.fixturenames  # and every test does it (tests/conftest.py)
