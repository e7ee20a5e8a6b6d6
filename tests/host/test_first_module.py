"""docs/first-module.md works as written: its files are taken from the page's code blocks, the module is
registered as pip would, and the page's own tests run against real services; its command runs too."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from host.testing import feedeater, feedeater_env, module_installed

PAGE = Path(__file__).resolve().parents[2] / "docs" / "first-module.md"
BLOCK = re.compile(r"```(?:python|toml|sql)\n(?:#|--) file: (\S+)\n(.*?)```", re.S)


@pytest.fixture
def kwalert(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The page's files in a source tree, registered for this process and (PYTHONPATH) its commands;
    yields the tree."""
    src = tmp_path / "src"
    files = {name: body for name, body in BLOCK.findall(PAGE.read_text())}
    assert set(files) >= {"pyproject.toml", "kwalert/__init__.py", "kwalert/migrations/0001_alerts.sql"}
    for name, body in files.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text(body)
    project = tomllib.loads(files["pyproject.toml"])
    target = project["project"]["entry-points"]["feedeater.modules"]["kwalert"]
    monkeypatch.syspath_prepend(str(src))
    try:
        with module_installed(tmp_path / "site", "kwalert", target) as pythonpath:
            monkeypatch.setenv("PYTHONPATH", os.pathsep.join((str(src), pythonpath)))
            yield src
    finally:
        for name in [m for m in sys.modules if m == "kwalert" or m.startswith("kwalert.")]:
            del sys.modules[name]


async def test_the_first_module_page_builds_a_working_module(
    kwalert: Path, tmp_path: Path, database_url: str, nats_url: str
) -> None:
    page_tests = _load(kwalert / "tests" / "test_kwalert.py")
    page_tests.test_a_keyword_matches_in_any_case()
    await page_tests.test_an_entry_with_a_keyword_raises_one_alert(tmp_path / "home", database_url, nats_url)
    env = feedeater_env(tmp_path / "cli", database_url, nats_url, PYTHONPATH=os.environ["PYTHONPATH"])
    res = feedeater(env, "kwalert", "--json")
    assert res.returncode == 0, res.stderr
    assert [a["keyword"] for a in json.loads(res.stdout)] == ["postgres"]


def _load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    page = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(page)
    return page
