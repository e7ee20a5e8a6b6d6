"""`make test`'s output (`-p tests.quiet`): nothing per test that passes or skips, so a failure's F or E
shows the moment it happens; then pytest's summary and the slowest tests."""

from __future__ import annotations

import pytest


def pytest_report_teststatus(report: pytest.TestReport) -> tuple[str, str, str] | None:
    if report.passed and report.when == "call":
        return "passed", "", "PASSED"
    if report.skipped:
        return "skipped", "", "SKIPPED"
    return None
