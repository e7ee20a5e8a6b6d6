"""What every benchmark reports beside its numbers: CPU seconds of a process tree and percentiles."""

from __future__ import annotations

import psutil


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
