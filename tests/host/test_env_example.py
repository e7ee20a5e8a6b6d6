""".env.example lists every environment variable feedeater reads, and nothing it doesn't."""

from __future__ import annotations

import re
from pathlib import Path

from host import module
from host.housekeeping import host_module
from host.jobs import trigger_override_key
from host.settings import env_key
from tests.services import module_installed

ROOT = Path(__file__).resolve().parents[2]
NAME = re.compile(r"FEEDEATER_[A-Z0-9_]*[A-Z0-9](?![A-Za-z0-9_{<])")


def read_by_code() -> set[str]:
    """Names spelled out in the source (host configuration), every module setting and job trigger."""
    names = {
        m
        for path in [*ROOT.glob("host/**/*.py"), *ROOT.glob("modules/**/*.py")]
        for m in NAME.findall(path.read_text())
    }
    plugins = module.discover()
    specs = {"host": host_module(plugins), **plugins}
    for name, spec in specs.items():
        names |= {env_key(name, s.key) for s in spec.manifest.settings}
        names |= {trigger_override_key(name, j.name) for j in spec.manifest.jobs}
    return names


def test_env_example_lists_every_variable_with_a_comment(tmp_path: Path) -> None:
    with module_installed(
        tmp_path / "site", "tap", "modules.tap:MODULE"
    ):  # until pyproject's entry point is installed
        expected = read_by_code()
    lines = (ROOT / ".env.example").read_text().splitlines()
    documented = {}
    for i, line in enumerate(lines):
        if match := re.match(r"^#?(FEEDEATER_[A-Z0-9_]+)=", line):
            documented[match[1]] = lines[i - 1]
    assert not expected - set(documented), "add these to .env.example"
    assert not set(documented) - expected, "nothing reads these any more"
    for name, comment in documented.items():
        assert comment.startswith("# "), f"{name} needs a one-line comment above it"
