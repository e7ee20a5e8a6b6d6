"""What every benchmark reports beside its numbers: CPU seconds of a process tree, percentiles, and the
JSON results file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import psutil

RESULTS = Path(__file__).resolve().parent / "results"


def cpu_tree_s(pid: int | None) -> float:
    """CPU seconds of a process and its children (a host and its parse workers; the postmaster and its
    backends). 0 when the process is gone or unknown."""
    if pid is None:
        return 0.0
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0.0
    total = 0.0
    for proc in procs:
        try:
            t = proc.cpu_times()
        except psutil.Error:
            continue
        total += t.user + t.system
    return total


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100) of a non-empty list."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def write_results(name: str, report: dict[str, Any]) -> None:
    """Write bench/results/<name> (JSON; dates and other non-JSON values as text) and say where."""
    out = RESULTS / name  # an absolute `name` (a script's --out) is used as it is
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2, default=str) + "\n")
    print(f"written to {out}")
