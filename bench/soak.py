"""Soak run: bench/load_farm.py for 30 minutes with RSS, fds and connections sampled every 30 s.

Why: leaks (memory, file descriptors, connections) show only as a trend over many poll cycles; the
report gives start/middle/end values and a least-squares slope per hour.

    .venv/bin/python bench/soak.py [--minutes 30] [--feeds 10000]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import load_farm

if __name__ == "__main__":
    args = load_farm.parse_args(minutes=30, sample_s=30)
    if args.out == load_farm.RESULTS / "load_farm.json":
        args.out = load_farm.RESULTS / "soak.json"
    load_farm.main(args)
