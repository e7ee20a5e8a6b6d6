"""Shared pytest fixtures. Service fixtures (Postgres, NATS) live in tests/services.py."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["tests.services"]

ROOT = Path(__file__).resolve().parent.parent
LOCAL_FIXTURES = ROOT / "fixtures"
SHARED_FIXTURES = ROOT.parent / "shared" / "fixtures"


@pytest.fixture(scope="session")
def shared_fixtures() -> Path:
    """The real-world corpus in ../shared/fixtures; tests that need it skip in a user's clone."""
    if not (SHARED_FIXTURES / "realworld" / "manifest.json").exists():
        pytest.skip(f"shared corpus not found at {SHARED_FIXTURES} (present in CI; absent in a user's clone)")
    return SHARED_FIXTURES


@pytest.fixture(scope="session")
def local_fixtures() -> Path:
    return LOCAL_FIXTURES
