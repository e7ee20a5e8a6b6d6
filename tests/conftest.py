"""Shared pytest fixtures. The service fixtures (PostgreSQL, NATS, feed server) come from the test kit's
pytest plugin (host/testing/plugin.py, entry point pytest11)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from tests.services import restored_logging

# Property tests check properties, not speed: on a busy machine Hypothesis' own timing checks (a 200 ms
# deadline per example, "data generation too slow") failed tests whose properties held.
settings.register_profile("feedeater", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("feedeater")

ROOT = Path(__file__).resolve().parent.parent
LOCAL_FIXTURES = ROOT / "fixtures"
SHARED_FIXTURES = ROOT.parent / "shared" / "fixtures"


@pytest.fixture(autouse=True)
def restored_root_logger() -> Iterator[None]:
    """Every test leaves logging as it found it (tests call `host.cli.main()` in-process, which sets it up)."""
    with restored_logging():
        yield


@pytest.fixture(scope="session")
def shared_fixtures() -> Path:
    """The real-world corpus in ../shared/fixtures; tests that need it skip in a user's clone."""
    if not (SHARED_FIXTURES / "realworld" / "manifest.json").exists():
        pytest.skip(f"shared corpus not found at {SHARED_FIXTURES} (present in CI; absent in a user's clone)")
    return SHARED_FIXTURES


@pytest.fixture(scope="session")
def local_fixtures() -> Path:
    return LOCAL_FIXTURES


# Test files whose tests run real processes for a minute or more (several hosts, SIGKILLs, restarts). Run
# first: the xdist scheduler hands tests out in collection order, and these collected last left one worker
# finishing a 100 s test alone at the end of the run.
LONG_FIRST = (
    "tests/faults/test_cluster.py",
    "tests/faults/test_scale_out.py",
    "tests/faults/test_tap_crash.py",
    "tests/discord/test_posting.py",
    "tests/security/test_xml_attacks.py",
    "tests/faults/test_crash.py",
    "tests/host/test_example_module.py",
    "tests/digest/test_contract.py",
    "tests/host/test_settings.py",
    "tests/host/test_day_two.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Move the long-running files to the front, each file's tests kept together and in order."""
    rank = {path: i for i, path in enumerate(LONG_FIRST)}

    def key(item: pytest.Item) -> int:
        return rank.get(Path(item.path).relative_to(ROOT).as_posix(), len(LONG_FIRST))

    items.sort(key=key)  # stable: everything else keeps its order
